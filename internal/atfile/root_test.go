package atfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
)

func TestOpenRoot(t *testing.T) {
	outside := t.TempDir()
	dir := t.TempDir()
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o600))
	must(t, os.Symlink("sub", filepath.Join(dir, "inlink")))
	must(t, os.Symlink(outside, filepath.Join(dir, "outlink")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	// Opening a FIFO without O_NONBLOCK would block: every case must
	// answer at once. A host path may lead anywhere (host is the code for
	// OpenRoot); only the os.Root confinement of OpenRootIn denies.
	for _, c := range []struct {
		rel        string
		host, code fault.Code
	}{
		{".", "", ""},
		{"sub", "", ""},
		{"inlink", "", ""},
		{"fifo", fault.NotFound, fault.NotFound},
		{"sub/f", fault.NotFound, fault.NotFound},
		{"missing", fault.NotFound, fault.NotFound},
		{"outlink", "", fault.Denied},
		{"..", "", fault.Denied},
	} {
		t.Run(c.rel, func(t *testing.T) {
			within(t, func() {
				r, err := OpenRoot(filepath.Join(dir, c.rel), "dir")
				if got := fault.CodeOf(err); got != c.host {
					t.Errorf("OpenRoot: code %q (%v), want %q", got, err, c.host)
				}
				if err == nil {
					r.Close()
				}
			})
			parent, err := os.OpenRoot(dir)
			must(t, err)
			defer parent.Close()
			within(t, func() {
				sub, err := OpenRootIn(parent, c.rel, "dir")
				if got := fault.CodeOf(err); got != c.code {
					t.Errorf("OpenRootIn: code %q (%v), want %q", got, err, c.code)
				}
				if err == nil {
					sub.Close()
				}
			})
		})
	}
}

// within fails the test if f does not return within ten seconds (an open
// that blocks cannot be interrupted; the goroutine is left behind).
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("blocked")
	}
}

func TestResolveRoot(t *testing.T) {
	dir := t.TempDir()
	gone := filepath.Join(t.TempDir(), "gone")
	must(t, os.Mkdir(gone, 0o700))
	must(t, os.Remove(gone))
	r, root, rel, err := ResolveRoot([]string{dir}, "a/b")
	if err != nil || root != dir || rel != "a/b" {
		t.Fatalf("%q %q %v", root, rel, err)
	}
	r.Close()
	if _, _, _, err := ResolveRoot([]string{dir}, "../x"); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("climbing out: %v", err)
	}
	if _, _, _, err := ResolveRoot([]string{gone}, "x"); fault.CodeOf(err) != fault.Unavailable {
		t.Fatalf("a granted root that is gone: %v", err)
	}
}
