package files

import (
	"context"
	"io"
	iofs "io/fs"
	"time"

	"github.com/capkit/capkit/internal/scope"
)

// Provider is the storage seam of the file tools: text and byte IO on
// resolved targets, and atomic mutation with an optional version guard.
//
// Every method takes a target the caller resolved in the scope of the
// roots its capabilities grant (internal/scope): the scope decides which
// roots a session may use, confines each name to its root and checks
// every change against the protected paths; a Provider does the IO
// through the target and may add its own refusals.
//
// A Provider guarantees, for every implementation:
//   - no name reaches outside its root, by "..", absolute names or symlinks;
//   - reads return regular files only and never block on a FIFO or device;
//   - a mutation is atomic: a reader or a crash sees the old content or
//     the new, never a mix, and a mutation never writes through a symlink;
//   - names in the staging namespace (scope.StagingPrefix: content being
//     written) are never listed, walked, read, written or moved.
//
// Failures are *fault.Error values: not_found, conflict (a version guard
// failed, or a move target exists), denied (outside the root, a symlink
// where a write was asked), invalid_input (not a regular file, a directory
// where a file was expected), limit, unavailable and io.
type Provider interface {
	// Stat describes t without following a final symlink.
	Stat(ctx context.Context, t *scope.Target) (Info, error)
	// Open opens a regular file for reading. Symlinks that stay inside the
	// root are followed.
	Open(ctx context.Context, t *scope.Target) (File, error)
	// ReadAll reads a whole regular file of at most maxBytes bytes (limit
	// otherwise) and returns it with its version.
	ReadAll(ctx context.Context, t *scope.Target, maxBytes int64) ([]byte, Version, error)
	// ReadDir lists a directory: the first max entries in name order (all
	// of them when max <= 0) and the number of entries it has. A directory
	// with more than limits.WalkMaxFiles entries is a limit failure.
	// Entries carry names and types only (see DirEntry).
	ReadDir(ctx context.Context, t *scope.Target, max int) (entries []DirEntry, total int, err error)
	// Walk calls fn for t and everything under it in lexical order,
	// following t itself if it is a symlink inside the root but no
	// symlink under it. fn may return iofs.SkipDir or
	// iofs.SkipAll.
	Walk(ctx context.Context, t *scope.Target, fn WalkFunc) error
	// Write atomically creates or replaces the regular file t with data,
	// creating missing parent directories inside the root, and returns the
	// new version. With opts.Guard set it writes only if the file's current
	// version equals opts.Expect (the zero Version: only if it does not
	// exist), else fails with conflict and changes nothing.
	Write(ctx context.Context, t *scope.Target, data []byte, opts *WriteOptions) (Version, error)
	// Move renames from to to inside one root, never replacing an
	// existing to (conflict).
	Move(ctx context.Context, from, to *scope.Target) error
}

// File is a regular file open for reading.
type File interface {
	io.Reader
	// ReaderAt reads a window of the file without moving the sequential
	// position.
	io.ReaderAt
	io.Closer
	// Info describes the file as it was when opened.
	Info() Info
	// Version is the version of the content read so far through Read. It
	// reports false until Read has returned io.EOF: only a file read
	// through to its end has a known version.
	Version() (Version, bool)
}

// Info describes a file, directory or symlink.
type Info struct {
	// Name is the root-relative, slash-separated name.
	Name    string
	Size    int64
	Mode    iofs.FileMode
	ModTime time.Time
}

// IsDir reports whether the entry is a directory.
func (i Info) IsDir() bool { return i.Mode.IsDir() }

// IsRegular reports whether the entry is a regular file.
func (i Info) IsRegular() bool { return i.Mode.IsRegular() }

// DirEntry is one entry of a directory listing: its name and its type as
// the directory records them. A listing reads no entry's metadata (size,
// permissions, times): a stat per entry was most of the cost of listing a
// large directory.
type DirEntry struct {
	// Name is the root-relative, slash-separated name.
	Name string
	// Type is the type bits of the entry's mode: 0 for a regular file,
	// iofs.ModeDir, iofs.ModeSymlink, iofs.ModeNamedPipe, iofs.ModeSocket,
	// iofs.ModeDevice (with iofs.ModeCharDevice for a character device).
	Type iofs.FileMode
}

// IsDir reports whether the entry is a directory.
func (e DirEntry) IsDir() bool { return e.Type.IsDir() }

// IsRegular reports whether the entry is a regular file.
func (e DirEntry) IsRegular() bool { return e.Type.IsRegular() }

// WalkFunc is called by Provider.Walk for each entry.
type WalkFunc func(info Info) error

// WriteOptions qualify a write. The zero value (or nil) writes
// unconditionally.
type WriteOptions struct {
	// Guard makes the write conditional on the file's current version.
	Guard bool
	// Expect is the version the file must have when Guard is set; the zero
	// Version means the file must not exist.
	Expect Version
}
