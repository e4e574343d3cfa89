package atfile

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/capkit/capkit/fault"
)

// Every way into a pseudo-filesystem is refused with denied: a directory
// opened by path or through an os.Root, a root, a subdirectory or file
// across a mount point, an entry's metadata, a walk that meets one.
func TestPseudoFSRefused(t *testing.T) {
	denied := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrPseudoFS) || fault.CodeOf(err) != fault.Denied {
			t.Errorf("%s: %v, want denied (pseudo-filesystem)", what, err)
		}
	}
	_, err := OpenDir("/proc")
	denied("OpenDir /proc", err)
	_, err = OpenRoot("/proc", "root")
	denied("OpenRoot /proc", err)
	_, _, err = OpenTree("/proc/self")
	denied("OpenTree /proc/self", err)
	_, err = OpenDir("/sys")
	denied("OpenDir /sys", err)
	r, err := os.OpenRoot("/")
	must(t, err)
	defer r.Close()
	_, err = OpenDirIn(r, "proc/self")
	denied("OpenDirIn proc/self", err)
	slash := openDir(t, "/")
	_, err = slash.Lstat("proc", "entry")
	denied("Lstat /proc", err)
	_, _, err = slash.OpenSubdir("proc", "directory")
	denied("OpenSubdir /proc", err)
	if fs, err := PseudoFSOf("/proc/self/environ"); err != nil || fs != "procfs" {
		t.Errorf("PseudoFSOf: %q %v", fs, err)
	}
	if fs, err := PseudoFSOf(t.TempDir()); err != nil || fs != "" {
		t.Errorf("PseudoFSOf of a temporary directory: %q %v", fs, err)
	}
	mounts, err := PseudoMounts("/dev")
	if err != nil || len(mounts) == 0 {
		t.Logf("no pseudo-filesystem under /dev (%v): walk through a mount point not tested here", err)
		return
	}
	err = Walk(context.Background(), openDir(t, "/dev"), WalkBounds{Names: 1 << 20, Depth: 64}, func(string, int, Stat, *Dir, string) (bool, error) {
		return true, nil
	})
	denied("Walk /dev (meets "+mounts[0].Path+")", err)
}
