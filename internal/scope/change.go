package scope

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/internal/noreplace"
)

// CheckWrite refuses, before anything is changed or read, a change to t
// (creating, replacing or removing it) that would reach a protected path,
// as spelled or as t's directory is named on disk now. It opens t's
// parent when it exists, so that the change made through it later needs
// no second check; where it does not exist yet, its deepest existing
// directory is checked, and each one made is checked as it is made. The
// operations check anyway: this is for a caller that must refuse a
// protected path before it asks a policy.
func (t *Target) CheckWrite() error { return t.precheck(writeCheck) }

// CheckRename is CheckWrite for either end of a rename: a name holding a
// protected path is refused too.
func (t *Target) CheckRename() error { return t.precheck(renameCheck) }

func (t *Target) precheck(c check) error {
	switch {
	case t.s == nil:
		return nil
	case t.name == ".":
		return t.s.refuse(c, t.root, t.name)
	}
	_, _, err := t.openParent()
	switch {
	case err == nil:
		return t.checkParent(c)
	case fault.CodeOf(err) == fault.NotFound:
		return t.checkBoth(c)
	}
	return err
}

// changeParent is openParent for a change, making t's missing parent
// directories first when make is set.
func (t *Target) changeParent(make bool) (*atfile.Dir, string, error) {
	d, base, err := t.openParent()
	if err == nil || !make || t.s == nil || fault.CodeOf(err) != fault.NotFound {
		return d, base, err
	}
	dir, base, err := splitRel(t.name)
	if err != nil {
		return nil, "", err
	}
	if d, _, err = t.makeDirs(dir, 0o755); err != nil {
		return nil, "", err
	}
	t.parent, t.base = d, base
	return d, base, nil
}

// ReplaceOptions qualify Replace. A nil *ReplaceOptions replaces or
// creates (mode 0600) unconditionally, in an existing directory.
type ReplaceOptions struct {
	// Role names t in messages; "" means "file".
	Role string
	// Mode is the permission bits of a new file; zero means 0o600. An
	// existing file keeps its own.
	Mode fs.FileMode
	// NoReplace makes an existing t a conflict, also one created while
	// the new content is written (RENAME_NOREPLACE).
	NoReplace bool
	// ReadWrite opens the staging file for reading too.
	ReadWrite bool
	// Check, when set, is called once the new content is durable, just
	// before the rename, with whether t exists and its metadata then
	// (under the lock every replacement of t in this process takes); an
	// error abandons the replacement and is returned.
	Check func(exists bool, cur Stat) error
	// MakeParents makes t's missing parent directories (mode 0755) first,
	// each checked against the protected paths before it is made.
	MakeParents bool
}

// Replace atomically creates or replaces the regular file t with what
// write writes (atfile.Dir.Replace: a staging file beside it, fsynced,
// renamed over it, the directory fsynced), once the protected paths allow
// it on the directory the rename is made in. A symlink or anything but a
// regular file at t is refused; nothing is written through a link.
func (t *Target) Replace(ctx context.Context, write func(*os.File) error, o *ReplaceOptions) error {
	var opts ReplaceOptions
	if o != nil {
		opts = *o
	}
	d, base, err := t.changeParent(opts.MakeParents)
	if err != nil {
		return err
	}
	if err := t.checkParent(writeCheck); err != nil {
		return err
	}
	return d.Replace(ctx, base, write, &atfile.ReplaceOptions{Role: opts.Role, Mode: opts.Mode, NoReplace: opts.NoReplace, ReadWrite: opts.ReadWrite, Check: opts.Check})
}

// MakeDirs makes the directory t names and its missing parents (mode's
// permission bits), each checked against the protected paths on the
// directory it is made in before it is made, and reports whether it made
// any. A symlink inside the root is followed on the way, as os.Root
// does; one leading out, or onto a pseudo-filesystem, is refused.
func (t *Target) MakeDirs(mode fs.FileMode) (made bool, err error) {
	if t.s == nil {
		return false, fault.New(fault.Internal, "scope: MakeDirs of a host path")
	}
	d, made, err := t.makeDirs(t.name, mode)
	if err != nil {
		return made, err
	}
	return made, d.Close()
}

// makeDirs makes rel (root-relative, cleaned) and its missing parents
// and returns it open. The deepest existing directory is opened through
// the root; each missing one is then made in its parent's descriptor once
// the protected paths allow it by the name that parent has on disk, and
// opened without following a symlink, so neither a symlink nor a
// directory swapped for one leads a new directory into a protected path.
func (t *Target) makeDirs(rel string, mode fs.FileMode) (_ *atfile.Dir, made bool, err error) {
	have := rel
	d, err := atfile.OpenDirIn(t.r, have)
	for errors.Is(err, fs.ErrNotExist) && have != "." {
		have = path.Dir(have)
		d, err = atfile.OpenDirIn(t.r, have)
	}
	if err != nil {
		return nil, false, err
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if have == rel {
		return d, false, nil
	}
	rest := rel
	if have != "." {
		rest = rel[len(have)+1:]
	}
	name := have
	for _, e := range strings.Split(rest, "/") {
		name = path.Join(name, e)
		if err = t.checkOpened(d, e, name, writeCheck); err != nil {
			return nil, made, err
		}
		var m bool
		if m, err = d.Mkdir(e, mode, name); err != nil {
			return nil, made, err
		}
		made = made || m
		var sub *atfile.Dir
		if sub, _, err = d.OpenSubdir(e, name); err != nil {
			return nil, made, err
		}
		d.Close()
		d = sub
	}
	return d, made, nil
}

// RenameOptions qualify RenameTo. A nil *RenameOptions renames into an
// existing directory.
type RenameOptions struct {
	// MakeParents makes the destination's missing parent directories
	// first, each checked as Replace's are.
	MakeParents bool
}

// RenameTo renames t to to, in the same root, never replacing an
// existing to (conflict), once the protected paths allow a rename from t
// and to to, each checked on the directory the rename is made in. Both
// directories are fsynced after. Whatever t is (a file, a directory, a
// symlink) is renamed: a caller that moves only some kinds looks first.
func (t *Target) RenameTo(ctx context.Context, to *Target, o *RenameOptions) error {
	if t.root != to.root || (t.s == nil) != (to.s == nil) {
		return fault.New(fault.InvalidInput, "source and destination are in different roots")
	}
	src, from, err := t.openParent()
	if err != nil {
		return err
	}
	if err := t.checkParent(renameCheck); err != nil {
		return err
	}
	if to.parent == nil && path.Dir(t.name) == path.Dir(to.name) {
		// One directory: the destination's is the source's.
		to.parent, to.base = src.Hold(), path.Base(to.name)
	}
	dst, dest, err := to.changeParent(o != nil && o.MakeParents)
	if err != nil {
		return err
	}
	if err := to.checkParent(renameCheck); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fault.As(err)
	}
	if dst == src || path.Dir(t.name) == path.Dir(to.name) && sameDir(src, dst) {
		return noreplace.Rename(src.File(), from, dest)
	}
	if err := noreplace.RenameBetween(src.File(), from, dst.File(), dest); err != nil {
		return err
	}
	if err := src.Sync(); err != nil {
		return fault.Wrap(fault.IO, err, "renamed, but syncing a directory failed")
	}
	if err := dst.Sync(); err != nil {
		return fault.Wrap(fault.IO, err, "renamed, but syncing a directory failed")
	}
	return nil
}

// sameDir reports whether a and b are one directory, opened twice.
func sameDir(a, b *atfile.Dir) bool {
	sa, err := atfile.Fstat(a.File())
	if err != nil {
		return false
	}
	sb, err := atfile.Fstat(b.File())
	return err == nil && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// Staged is a new directory being filled before CreateDir renames it
// into place: private (mode 0700) and under a staging name, so no
// operation serves it meanwhile. Names in it are slash-separated and
// relative to it; no symlink is followed in them.
type Staged struct{ d *atfile.Dir }

// walkTo opens the directory holding rel in s and returns it with rel's
// last element; close it unless it is s's own.
func (s *Staged) walkTo(rel string) (*atfile.Dir, string, error) {
	elems := strings.Split(rel, "/")
	d := s.d
	for _, e := range elems[:len(elems)-1] {
		sub, _, err := d.OpenSubdir(e, rel)
		if d != s.d {
			d.Close()
		}
		if err != nil {
			return nil, "", err
		}
		d = sub
	}
	return d, elems[len(elems)-1], nil
}

func (s *Staged) done(d *atfile.Dir) {
	if d != s.d {
		d.Close()
	}
}

// Mkdir makes the directory rel, whose parent exists, mode 0700.
func (s *Staged) Mkdir(rel string) error {
	d, name, err := s.walkTo(rel)
	if err != nil {
		return err
	}
	defer s.done(d)
	made, err := d.Mkdir(name, 0o700, rel)
	if err == nil && !made {
		err = fault.New(fault.Conflict, "%s already exists in the staging directory", rel)
	}
	return err
}

// Create creates the new file rel, whose directory exists, for writing
// (mode 0600).
func (s *Staged) Create(rel string) (*os.File, error) {
	d, name, err := s.walkTo(rel)
	if err != nil {
		return nil, err
	}
	defer s.done(d)
	return d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600, rel)
}

// Sync makes the entries of the directory rel ("." for s itself)
// durable.
func (s *Staged) Sync(rel string) error {
	if rel == "." {
		return s.d.Sync()
	}
	d, name, err := s.walkTo(rel)
	if err != nil {
		return err
	}
	defer s.done(d)
	sub, _, err := d.OpenSubdir(name, rel)
	if err != nil {
		return err
	}
	defer sub.Close()
	return sub.Sync()
}

// CreateDir makes t a new directory holding what fill puts in it: fill
// works in a staging directory beside t, which is renamed to t only once
// fill succeeded, never replacing an existing t (conflict), and removed
// on any failure. The rename is checked against the protected paths as a
// rename to t is, so nothing fill makes can be protected unless t is or
// holds a protected path. role names the staging directory's purpose
// ("zip").
func (t *Target) CreateDir(ctx context.Context, role string, fill func(*Staged) error) (err error) {
	d, base, err := t.openParent()
	if err != nil {
		return err
	}
	if err := t.checkParent(renameCheck); err != nil {
		return err
	}
	sd, name, err := d.MkdirStaging(ctx, role)
	if err != nil {
		return err
	}
	// The staging directory stays locked (against another process's
	// sweep) until it is renamed or removed.
	defer sd.Close()
	defer func() {
		if err != nil {
			d.RemoveStaging(name)
		}
	}()
	if err = fill(&Staged{d: sd}); err == nil {
		err = sd.Sync()
	}
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fault.As(err)
	}
	return noreplace.Rename(d.File(), name, base)
}

// Changes is a directory opened for changes to a few of its names, each
// checked against the protected paths on it when it was opened
// (OpenForChanges): a journal's records and lock, say.
type Changes struct {
	d     *atfile.Dir
	names []string
}

// OpenForChanges opens the directory t names (following a symlink inside
// the root, as os.Root does) for changes to names, single elements, once
// the protected paths allow each, as spelled and as the directory is
// named on disk.
func (t *Target) OpenForChanges(names ...string) (*Changes, error) {
	var d *atfile.Dir
	var err error
	if t.s == nil {
		d, err = atfile.OpenDir(t.name)
	} else {
		d, err = atfile.OpenDirIn(t.r, t.name)
	}
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if err := t.checkOpened(d, n, path.Join(t.name, n), writeCheck); err != nil {
			d.Close()
			return nil, err
		}
	}
	return &Changes{d: d, names: names}, nil
}

// OpenFile opens name, one of the names c was opened for, with flag and,
// for a file it creates, perm; never following a symlink, never blocking
// on a FIFO. What it opened is the caller's to check.
func (c *Changes) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if !slices.Contains(c.names, name) {
		return nil, fault.New(fault.Internal, "scope: %q was not checked when the directory was opened", name)
	}
	return c.d.OpenFile(name, flag, perm, name)
}

// Stat is the directory's own metadata.
func (c *Changes) Stat() (Stat, error) { return atfile.Fstat(c.d.File()) }

// Sync makes the directory's entries durable.
func (c *Changes) Sync() error { return c.d.Sync() }

// Close closes the directory.
func (c *Changes) Close() error { return c.d.Close() }
