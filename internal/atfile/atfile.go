// Package atfile opens, creates, inspects and renames files by a single
// name relative to an open directory (the openat family of system calls),
// never following a symbolic link in that name.
//
// A Dir is an open directory. Every name a Dir method takes is one path
// element (no "/", not "." or ".."), so nothing between a check and a use
// can redirect the operation to another directory: a rename or symlink
// swap elsewhere in the path does not change which directory the open
// descriptor refers to. This is what capkit's file IO, tree walk, state
// replacement and publication build on; os.Root confines a path to a root
// but follows symlinks inside it, which these operations must not do for
// their final element.
//
// It is the ground beneath internal/scope, capkit's confinement, which
// every group reaches files through (internal/archtest names the few
// other packages that use atfile, and why): roots (AcquireRoot: once per
// process), directories, files and walks are opened here, and files are
// replaced with Dir.Replace, the one "staging file, fsync, rename"
// routine.
//
// What it guarantees: OpenRegular returns only a regular file, opened with
// O_NOFOLLOW|O_NONBLOCK (a FIFO or device is never opened for reading in
// the normal case, and never blocks if one is swapped in), and the file it
// returns is the one whose metadata it checked. OpenListed, for a name a
// listing has just shown as a regular file, skips the look before the
// open: it too returns only a regular file, but a device node renamed
// into place since the listing is opened before it is refused;
// OpenListedFD is OpenListed on a bare descriptor (Regular). Nothing on a
// pseudo-filesystem (procfs, sysfs and the rest of pseudoFS) is opened,
// stat'ed or walked: every directory opened is checked with fstatfs, and
// so is every entry on another device than its directory (a mount point).
// Names in the staging namespace (StagingPrefix) are never listed, walked,
// opened or resolved; staging files are created with O_EXCL, mode 0600,
// and an flock their writer holds, so a sweep (Replace's, Clean) removes
// only those whose writer is gone.
//
// What it does not guarantee: how the directory itself was reached. OpenDir
// follows symlinks in the host path it is given (the host names that path
// and is trusted with it); OpenDirIn resolves through an os.Root, which
// follows symlinks only while they stay inside the root.
//
// Linux only: elsewhere every operation fails with fault.Unavailable
// rather than use weaker path-based calls.
package atfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/capkit/capkit/fault"
)

// Stat is the metadata capkit compares to tell whether a file changed:
// identity (device, inode), type and permissions, size and both times.
type Stat struct {
	Dev, Ino   uint64
	Mode       fs.FileMode
	Nlink      uint64
	Uid, Gid   uint32
	Size       int64
	ModTime    time.Time
	ChangeTime time.Time
}

// Same reports whether s and o describe the same, unchanged file: same
// identity, mode, link count, size, modification and change time. The
// change time moves on any write, truncation, chmod, chown or link count
// change, so a file rewritten with the same size and a forged mtime still
// differs, within the filesystem's timestamp granularity.
func (s Stat) Same(o Stat) bool {
	return s.Dev == o.Dev && s.Ino == o.Ino && s.Mode == o.Mode && s.Nlink == o.Nlink && s.Size == o.Size &&
		s.ModTime.Equal(o.ModTime) && s.ChangeTime.Equal(o.ChangeTime)
}

// Kind names the file type of m for messages: "a directory", "a FIFO"...
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "an irregular file"
}

// Dir is an open directory. It is safe for concurrent use by the methods
// below; Close it when done.
type Dir struct {
	f *os.File
	// dev is the device of the directory, checked not to be a
	// pseudo-filesystem: an entry on the same device needs no check.
	dev uint64
	// holds counts the Holds not yet closed.
	holds atomic.Int64
}

// File returns the directory's *os.File, for callers that pass it to
// another *at helper (internal/noreplace). Do not close it.
func (d *Dir) File() *os.File { return d.f }

// Hold keeps d open through one more Close: whoever holds it closes it
// too, and the directory is closed by the last Close. Hold only a Dir
// that is open.
func (d *Dir) Hold() *Dir {
	d.holds.Add(1)
	return d
}

// Close closes the directory, unless a Hold keeps it open.
func (d *Dir) Close() error {
	if d.holds.Add(-1) >= 0 {
		return nil
	}
	return d.f.Close()
}

// Sync makes entries created, renamed or removed in the directory durable.
func (d *Dir) Sync() error {
	if err := d.f.Sync(); err != nil {
		return fault.Wrap(fault.IO, err, "syncing a directory failed")
	}
	return nil
}

// SplitParent splits a cleaned absolute host path into its parent
// directory and its last element. It refuses relative paths and paths
// whose last element is not a name ("/", or a path ending in "..").
func SplitParent(path string) (dir, name string, err error) {
	if path == "" || strings.IndexByte(path, 0) >= 0 {
		return "", "", fault.New(fault.InvalidInput, "path is empty or contains a NUL byte")
	}
	if !filepath.IsAbs(path) {
		return "", "", fault.New(fault.InvalidInput, "path must be absolute")
	}
	c := filepath.Clean(path)
	dir, name = filepath.Split(c)
	if name == "" || name == "." || name == ".." {
		return "", "", fault.New(fault.InvalidInput, "path must name an entry inside a directory, not a filesystem root")
	}
	return filepath.Clean(dir), name, nil
}

// checkName refuses anything but a single path element, and a name in
// the staging namespace (see IsStaging).
func checkName(name string) error {
	if err := checkElement(name); err != nil {
		return err
	}
	if IsStaging(name) {
		return Reserved(name)
	}
	return nil
}

// checkElement refuses anything but a single path element.
func checkElement(name string) error {
	// Two byte scans: ContainsAny's set loop costs several times more on
	// the short names of a walk's every open.
	if name == "" || name == "." || name == ".." || strings.IndexByte(name, '/') >= 0 || strings.IndexByte(name, 0) >= 0 {
		return fault.New(fault.Internal, "atfile: %q is not a single path element", name)
	}
	return nil
}
