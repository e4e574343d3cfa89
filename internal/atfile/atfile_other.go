//go:build !linux

package atfile

import (
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

// OpenSubdir is unavailable on this platform.
func (d *Dir) OpenSubdir(string, string) (*Dir, Stat, error) { return nil, Stat{}, unsupported() }

// CreateTemp is unavailable on this platform.
func (d *Dir) CreateTemp(string) (*os.File, string, error) { return nil, "", unsupported() }

// Remove is unavailable on this platform.
func (d *Dir) Remove(string) error { return unsupported() }

// Rename is unavailable on this platform.
func (d *Dir) Rename(string, string) error { return unsupported() }

// ReadNames is unavailable on this platform.
func (d *Dir) ReadNames(int) ([]string, error) { return nil, unsupported() }

// Fstat is unavailable on this platform.
func Fstat(*os.File) (Stat, error) { return Stat{}, unsupported() }
