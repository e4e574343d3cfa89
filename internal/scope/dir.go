package scope

import (
	"context"
	"io/fs"
	"os"

	"github.com/capkit/capkit/internal/atfile"
)

// The ground's types and refusals, as the operations return them.
type (
	// Stat is a file's metadata (atfile.Stat).
	Stat = atfile.Stat
	// Entry is one directory entry: name, type, listed inode.
	Entry = atfile.Entry
	// WalkBounds bound a Walk (atfile.WalkBounds).
	WalkBounds = atfile.WalkBounds
	// Regular is a regular file open on a bare descriptor.
	Regular = atfile.Regular
)

// The causes of the refusals, for errors.Is.
var (
	ErrChanged    = atfile.ErrChanged
	ErrSymlink    = atfile.ErrSymlink
	ErrNotRegular = atfile.ErrNotRegular
	ErrNotDir     = atfile.ErrNotDir
	ErrReserved   = atfile.ErrReserved
)

// StagingPrefix starts every name in the staging namespace: content being
// written before it is renamed into place, which no operation serves.
const StagingPrefix = atfile.StagingPrefix

// IsStaging reports whether any element of the slash-separated name is in
// the staging namespace.
func IsStaging(name string) bool { return atfile.HasStagingElement(name) }

// Clean removes every stale staging entry (its writer gone) in the tree
// below the host directory root and returns how many it removed
// (atfile.Clean: capkit clean, the host's own sweep).
func Clean(ctx context.Context, root string) (int, error) { return atfile.Clean(ctx, root) }

// Reserved is the refusal of a name in the staging namespace.
func Reserved(name string) error { return atfile.Reserved(name) }

// Kind names the file type of m in messages ("a directory", "a FIFO").
func Kind(m fs.FileMode) string { return atfile.Kind(m) }

// NotRegular is the refusal of what is not a regular file (denied for a
// symlink).
func NotRegular(role string, m fs.FileMode) error { return atfile.NotRegular(role, m) }

// Fault classifies a filesystem error about role as a *fault.Error that
// names role, never a host path (atfile.Fault).
func Fault(err error, role string) error { return atfile.Fault(err, role) }

// Fstat is the metadata of an open file.
func Fstat(f *os.File) (Stat, error) { return atfile.Fstat(f) }

// Dir is a directory opened through a Target: its entries can be looked
// at, listed, walked and opened for reading. Nothing is changed through
// a Dir: every change is a Target's, which checks it.
type Dir struct{ d *atfile.Dir }

// Stat is the directory's own metadata.
func (d *Dir) Stat() (Stat, error) { return atfile.Fstat(d.d.File()) }

// Lstat describes the entry name without following a symlink.
func (d *Dir) Lstat(name, role string) (Stat, error) { return d.d.Lstat(name, role) }

// OpenRegular opens the regular file name for reading, never following a
// symlink (atfile.Dir.OpenRegular).
func (d *Dir) OpenRegular(name, role string) (*os.File, Stat, error) {
	return d.d.OpenRegular(name, role)
}

// OpenListedFD opens, on a bare descriptor, a name the directory's listing
// has just shown as a regular file (atfile.Dir.OpenListedFD; the Regular
// is a value, used through its address).
func (d *Dir) OpenListedFD(name, role string) (Regular, Stat, error) {
	return d.d.OpenListedFD(name, role)
}

// OpenSubdir opens the directory name without following a symlink.
func (d *Dir) OpenSubdir(name, role string) (*Dir, Stat, error) {
	sub, st, err := d.d.OpenSubdir(name, role)
	if err != nil {
		return nil, Stat{}, err
	}
	return &Dir{d: sub}, st, nil
}

// EntryStat is what a walk knows of a listed entry (atfile.Dir.EntryStat):
// with typesOnly, a regular file or directory's type alone (Size -1);
// ok is false when the entry was removed since it was listed.
func (d *Dir) EntryStat(e Entry, typesOnly bool) (st Stat, ok bool, err error) {
	return d.d.EntryStat(e, typesOnly)
}

// Descend opens the listed directory name, which EntryStat gave st, as a
// walk walks into it (atfile.Dir.Descend: no symlink followed, the
// directory checked to be the one listed); ok is false when it was
// removed since.
func (d *Dir) Descend(name string, st Stat) (sub *Dir, ok bool, err error) {
	s, ok, err := d.d.Descend(name, st)
	if err != nil || !ok {
		return nil, ok, err
	}
	return &Dir{d: s}, true, nil
}

// ReadEntries lists the directory, sorted by name, staging names left
// out, failing with limit past max entries (atfile.Dir.ReadEntries).
func (d *Dir) ReadEntries(ctx context.Context, max int, role string) ([]Entry, error) {
	return d.d.ReadEntries(ctx, max, role)
}

// Readlink is the target of the symbolic link name.
func (d *Dir) Readlink(name, role string) (string, error) { return d.d.Readlink(name, role) }

// Sync makes the directory's entries durable.
func (d *Dir) Sync() error { return d.d.Sync() }

// Hold keeps d open through one more Close (atfile.Dir.Hold).
func (d *Dir) Hold() *Dir {
	d.d.Hold()
	return d
}

// Close closes the directory, unless a Hold keeps it open.
func (d *Dir) Close() error { return d.d.Close() }

// WalkFunc is called for each entry below a walk's directory: rel is its
// slash-separated path below it, depth its number of elements, st its
// metadata (not following a symlink), parent and name where it is.
// Returning descend=true walks into a directory; an error stops the walk.
type WalkFunc func(rel string, depth int, st Stat, parent *Dir, name string) (descend bool, err error)

// Walk visits the tree below d depth first, never following a symlink
// and never leaving the tree (atfile.Walk).
func Walk(ctx context.Context, d *Dir, b WalkBounds, fn WalkFunc) error {
	var last *atfile.Dir
	var wrapped *Dir
	return atfile.Walk(ctx, d.d, b, func(rel string, depth int, st Stat, parent *atfile.Dir, name string) (bool, error) {
		if parent != last {
			last, wrapped = parent, &Dir{d: parent}
		}
		return fn(rel, depth, st, wrapped, name)
	})
}
