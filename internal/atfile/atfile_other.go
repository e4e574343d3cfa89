//go:build !linux

package atfile

import (
	"context"
	"io/fs"
	"os"

	"github.com/capkit/capkit/fault"
)

func unsupported() error {
	return fault.New(fault.Unavailable, "no-follow, descriptor-relative file operations are implemented for Linux only; refusing weaker path-based calls")
}

// OpenDir is unavailable on this platform.
func OpenDir(string) (*Dir, error) { return nil, unsupported() }

// OpenDirIn is unavailable on this platform.
func OpenDirIn(*os.Root, string) (*Dir, error) { return nil, unsupported() }

// Lstat is unavailable on this platform.
func (d *Dir) Lstat(string, string) (Stat, error) { return Stat{}, unsupported() }

// OpenRegular is unavailable on this platform.
func (d *Dir) OpenRegular(string, string) (*os.File, Stat, error) { return nil, Stat{}, unsupported() }

// OpenListed is unavailable on this platform.
func (d *Dir) OpenListed(string, string) (*os.File, Stat, error) { return nil, Stat{}, unsupported() }

// OpenSubdir is unavailable on this platform.
func (d *Dir) OpenSubdir(string, string) (*Dir, Stat, error) { return nil, Stat{}, unsupported() }

// ReadNames is unavailable on this platform.
func (d *Dir) ReadNames(int) ([]string, error) { return nil, unsupported() }

// Fstat is unavailable on this platform.
func Fstat(*os.File) (Stat, error) { return Stat{}, unsupported() }

// Readlink is unavailable on this platform.
func (d *Dir) Readlink(string, string) (string, error) { return "", unsupported() }

// Entry is one directory entry: its name and the type bits of its mode.
type Entry struct {
	Name string
	Type fs.FileMode
	Ino  uint64
}

// ReadEntries is unavailable on this platform.
func (d *Dir) ReadEntries(context.Context, int, string) ([]Entry, error) { return nil, unsupported() }

// ReplaceOptions qualify Replace (unavailable on this platform).
type ReplaceOptions struct {
	Role      string
	Mode      fs.FileMode
	NoReplace bool
	ReadWrite bool
	Check     func(exists bool, cur Stat) error
}

// Replace is unavailable on this platform.
func (d *Dir) Replace(context.Context, string, func(*os.File) error, *ReplaceOptions) error {
	return unsupported()
}

// Clean is unavailable on this platform.
func Clean(context.Context, string) (int, error) { return 0, unsupported() }

func openSelfIn(*os.Root, string) (*Dir, error) { return nil, unsupported() }

// MkdirStaging is unavailable on this platform.
func (d *Dir) MkdirStaging(context.Context, string) (*Dir, string, error) {
	return nil, "", unsupported()
}

// PseudoFSOf knows no filesystem types on this platform.
func PseudoFSOf(string) (string, error) { return "", unsupported() }

// Mount is a pseudo-filesystem mounted inside a directory.
type Mount struct{ Path, FS string }

// PseudoMounts is unavailable on this platform.
func PseudoMounts(string) ([]Mount, error) { return nil, unsupported() }

// Regular is a regular file open for reading (unavailable on this
// platform).
type Regular struct{}

// OpenListedFD is unavailable on this platform.
func (d *Dir) OpenListedFD(string, string) (Regular, Stat, error) {
	return Regular{}, Stat{}, unsupported()
}

// ReadAt is unavailable on this platform.
func (r *Regular) ReadAt([]byte, int64) (int, error) { return 0, unsupported() }

// Read is unavailable on this platform.
func (r *Regular) Read([]byte) (int, error) { return 0, unsupported() }

// Close is unavailable on this platform.
func (r *Regular) Close() error { return unsupported() }

// RemoveAll is unavailable on this platform.
func RemoveAll(context.Context, string) error { return unsupported() }

// Usage is unavailable on this platform.
func Usage(context.Context, string) (int64, error) { return 0, unsupported() }

// Mkdir is unavailable on this platform.
func (d *Dir) Mkdir(string, fs.FileMode, string) (bool, error) { return false, unsupported() }

// OpenFile is unavailable on this platform.
func (d *Dir) OpenFile(string, int, fs.FileMode, string) (*os.File, error) {
	return nil, unsupported()
}

// RemoveStaging is unavailable on this platform.
func (d *Dir) RemoveStaging(string) error { return unsupported() }

// StagingEntry is a staging entry and its metadata.
type StagingEntry struct {
	Name string
	Stat Stat
}

// StaleStaging is unsupported on this platform.
func (d *Dir) StaleStaging(context.Context) ([]StagingEntry, error) { return nil, unsupported() }

// RemoveStale is unsupported on this platform.
func (d *Dir) RemoveStale(string, Stat) (bool, error) { return false, unsupported() }
