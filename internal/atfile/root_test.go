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
	// answer at once. A host path may lead anywhere.
	for _, c := range []struct {
		rel  string
		host fault.Code
	}{
		{".", ""},
		{"sub", ""},
		{"inlink", ""},
		{"fifo", fault.NotFound},
		{"sub/f", fault.NotFound},
		{"missing", fault.NotFound},
		{"outlink", ""},
		{"..", ""},
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
