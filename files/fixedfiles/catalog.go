package fixedfiles

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
)

// Errors wrapped by the faults this package returns; test with errors.Is.
var (
	ErrInvalidID = fault.NewMark("fixedfiles: invalid identifier")
	ErrLimits    = fault.NewMark("fixedfiles: limit outside the allowed range")
	ErrDuplicate = fault.NewMark("fixedfiles: duplicate identifier")
	ErrFull      = fault.NewMark("fixedfiles: entry limit reached")
	ErrTooLarge  = fault.NewMark("fixedfiles: file exceeds the byte limit")
	ErrNotUTF8   = fault.NewMark("fixedfiles: content is not valid UTF-8")
	ErrUnknownID = fault.NewMark("fixedfiles: unknown identifier")
	ErrBuilt     = fault.NewMark("fixedfiles: builder already built; a built catalog takes no new entries")
	ErrClosed    = fault.NewMark("fixedfiles: catalog closed")
)

// Sentinels shared with the other file packages (fileio, zipfile), so one
// errors.Is test recognises the condition whichever package reported it.
var (
	// ErrNotRegular: the file is a directory, FIFO, socket, device or
	// symlink.
	ErrNotRegular = scope.ErrNotRegular
	// ErrChanged: the file changed while it was being added or read.
	ErrChanged = scope.ErrChanged
)

// Options bound a catalog. Zero fields mean the defaults
// limits.CatalogDefaultEntries (64) and limits.CatalogDefaultFileBytes
// (64 KiB); no field may exceed limits.CatalogHardEntries (1,024) or
// limits.CatalogHardFileBytes (4 MiB).
type Options struct {
	// MaxEntries bounds the number of entries.
	MaxEntries int
	// MaxFileBytes bounds each file, at insert and at every read.
	MaxFileBytes int64
}

func (o Options) withDefaults() (Options, error) {
	if o.MaxEntries == 0 {
		o.MaxEntries = limits.CatalogDefaultEntries
	}
	if o.MaxFileBytes == 0 {
		o.MaxFileBytes = limits.CatalogDefaultFileBytes
	}
	if o.MaxEntries < 0 || o.MaxEntries > limits.CatalogHardEntries {
		return o, fault.Wrap(fault.InvalidInput, ErrLimits, "catalog max entries %d is outside 1..%d", o.MaxEntries, limits.CatalogHardEntries)
	}
	if o.MaxFileBytes < 0 || o.MaxFileBytes > limits.CatalogHardFileBytes {
		return o, fault.Wrap(fault.InvalidInput, ErrLimits, "catalog max file bytes %d is outside 1..%d", o.MaxFileBytes, limits.CatalogHardFileBytes)
	}
	return o, nil
}

type entry struct {
	f *os.File
	// label names the file in host-side messages only (the path given at
	// insert, or the host file's name). It is never opened again.
	label string
}

// Builder collects entries during trusted setup. It is not safe for
// concurrent use. Build hands its entries to a Catalog; after that every
// Insert fails with ErrBuilt.
type Builder struct {
	opts    Options
	entries map[string]*entry
	built   bool
}

// NewBuilder returns an empty Builder. opts may be nil; a limit above the
// hard limit (or negative) is refused with invalid_input wrapping ErrLimits.
func NewBuilder(opts *Options) (*Builder, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Builder{opts: o, entries: map[string]*entry{}}, nil
}

// Len is the number of entries added so far.
func (b *Builder) Len() int { return len(b.entries) }

// InsertPath opens path once, read-only and non-blocking, and adds the
// open file under id. Refused: a malformed or duplicate identifier, a full
// catalog, a path that cannot be opened, anything but a regular file, a
// file over MaxFileBytes, and a file replaced between the check and the
// open. On failure nothing is added and nothing stays open.
func (b *Builder) InsertPath(id, path string) error {
	if err := b.admit(id); err != nil {
		return err
	}
	// Stat first so that a device or FIFO is refused without being opened
	// (opening some devices has effects); the descriptor's own Stat below
	// is what decides.
	pre, err := os.Stat(path)
	if err != nil {
		return openFault(id, path, err)
	}
	if !pre.Mode().IsRegular() {
		return notRegular(id, path, pre.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return openFault(id, path, err)
	}
	if err := b.insert(id, f, path, pre); err != nil {
		f.Close()
		return err
	}
	return nil
}

// InsertOpen adds f, a file the host opened and verified itself, under id.
// The same checks as InsertPath apply to the descriptor. On success the
// catalog owns f and closes it with Catalog.Close; on failure the caller
// still owns it.
func (b *Builder) InsertOpen(id string, f *os.File) error {
	if f == nil {
		return fault.New(fault.InvalidInput, "catalog entry %q: nil file", id)
	}
	if err := b.admit(id); err != nil {
		return err
	}
	return b.insert(id, f, f.Name(), nil)
}

func (b *Builder) admit(id string) error {
	if b.built {
		return fault.Wrap(fault.Conflict, ErrBuilt, "catalog already built: entries can only be added during setup")
	}
	if err := checkID(id); err != nil {
		return err
	}
	if _, dup := b.entries[id]; dup {
		return fault.Wrap(fault.Conflict, ErrDuplicate, "catalog entry %q is already defined", id)
	}
	if len(b.entries) >= b.opts.MaxEntries {
		return fault.Wrap(fault.Limit, ErrFull, "catalog entry %q: the catalog already holds its limit of %d entries", id, b.opts.MaxEntries)
	}
	return nil
}

func (b *Builder) insert(id string, f *os.File, label string, pre os.FileInfo) error {
	fi, err := f.Stat()
	if err != nil {
		return fault.Wrap(fault.IO, err, "catalog entry %q: cannot stat %s", id, label)
	}
	if !fi.Mode().IsRegular() {
		return notRegular(id, label, fi.Mode())
	}
	if pre != nil && !os.SameFile(pre, fi) {
		return fault.Wrap(fault.Integrity, ErrChanged, "catalog entry %q: %s was replaced while it was being opened", id, label)
	}
	if fi.Size() > b.opts.MaxFileBytes {
		return tooLarge(id, label, fi.Size(), b.opts.MaxFileBytes)
	}
	b.entries[id] = &entry{f: f, label: label}
	return nil
}

// Build returns the catalog of the entries added so far and closes the
// Builder: every later Insert fails with ErrBuilt, and the Catalog offers
// no way to add entries.
func (b *Builder) Build() (*Catalog, error) {
	if b.built {
		return nil, fault.Wrap(fault.Conflict, ErrBuilt, "catalog already built")
	}
	b.built = true
	c := &Catalog{opts: b.opts, entries: b.entries}
	b.entries = nil
	return c, nil
}

// Close closes the files of a Builder that was never built (setup failed
// part way). After Build the files belong to the Catalog and Close does
// nothing.
func (b *Builder) Close() error {
	if b.built {
		return nil
	}
	b.built = true
	var errs []error
	for _, e := range b.entries {
		errs = append(errs, e.f.Close())
	}
	b.entries = nil
	return errors.Join(errs...)
}

// Catalog is a fixed set of pinned files. It has no method that changes
// its entries. It is safe for concurrent use.
type Catalog struct {
	opts    Options
	entries map[string]*entry

	closeOnce sync.Once
	closeErr  error
}

// Len is the number of entries.
func (c *Catalog) Len() int { return len(c.entries) }

// IDs returns the identifiers in lexical order, for the host (a check
// command, a description it writes itself). Model-facing code must not
// reveal them unless the host decides to.
func (c *Catalog) IDs() []string {
	ids := make([]string, 0, len(c.entries))
	for id := range c.entries {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Limits returns the effective limits.
func (c *Catalog) Limits() Options { return c.opts }

// Read returns the whole content of the entry id, or a detailed fault for
// the host's log: invalid_input (malformed id, ErrInvalidID), not_found
// (ErrUnknownID), limit (over MaxFileBytes, ErrTooLarge), integrity
// (invalid UTF-8, ErrNotUTF8; the file grew during the read, ErrChanged),
// io (the read failed, or ErrClosed).
func (c *Catalog) Read(id string) ([]byte, error) {
	return c.read(id, c.opts.MaxFileBytes)
}

// read reads the entry whole with positioned reads, failing over max
// bytes. The buffer is sized from fstat; a one-byte read at that size then
// tells whether the file grew in between, which fails the read (integrity)
// rather than return the old size's prefix as the whole.
func (c *Catalog) read(id string, max int64) ([]byte, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	e, ok := c.entries[id]
	if !ok {
		return nil, fault.Wrap(fault.NotFound, ErrUnknownID, "no catalog entry %q", id)
	}
	fi, err := e.f.Stat()
	if err != nil {
		return nil, readFault(id, e, err)
	}
	if fi.Size() > max {
		return nil, tooLarge(id, e.label, fi.Size(), max)
	}
	if testHookAfterStat != nil {
		testHookAfterStat()
	}
	buf := make([]byte, fi.Size())
	n, err := e.f.ReadAt(buf, 0)
	buf = buf[:n]
	if err == nil {
		var probe [1]byte
		if n, err = e.f.ReadAt(probe[:], fi.Size()); n > 0 {
			return nil, fault.Wrap(fault.Integrity, ErrChanged.With(fmt.Errorf("%s grew past %d bytes during the read", e.label, fi.Size())),
				"catalog entry %q changed while it was read; retry", id)
		}
	}
	if err != io.EOF {
		return nil, readFault(id, e, err)
	}
	if !utf8.Valid(buf) {
		return nil, fault.Wrap(fault.Integrity, ErrNotUTF8.With(fmt.Errorf("%s: first invalid byte at offset %d", e.label, invalidOffset(buf))),
			"catalog entry %q is not valid UTF-8", id)
	}
	return buf, nil
}

// testHookAfterStat runs between the size check and the read, so a test
// can grow the file in that window.
var testHookAfterStat func()

// Close closes every file. Reads after Close fail with io (ErrClosed).
func (c *Catalog) Close() error {
	c.closeOnce.Do(func() {
		var errs []error
		for _, e := range c.entries {
			errs = append(errs, e.f.Close())
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

func invalidOffset(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

func openFault(id, path string, err error) error {
	fe := fault.As(err)
	return fault.Wrap(fe.Code, err, "catalog entry %q: cannot open %s", id, path)
}

func notRegular(id, label string, mode os.FileMode) error {
	return fault.Wrap(fault.InvalidInput, ErrNotRegular,
		"catalog entry %q: %s is not a regular file (%s); only regular files can be catalog entries", id, label, scope.Kind(mode))
}

func tooLarge(id, label string, size, max int64) error {
	return fault.Wrap(fault.Limit, ErrTooLarge.With(fmt.Errorf("the file is %s", label)),
		"catalog entry %q: %d bytes exceeds the limit of %d", id, size, max)
}

func readFault(id string, e *entry, err error) error {
	cause := fmt.Errorf("%s: %w", e.label, err)
	if errors.Is(err, os.ErrClosed) {
		cause = ErrClosed.With(cause)
	}
	return fault.Wrap(fault.IO, cause, "reading catalog entry %q failed", id)
}
