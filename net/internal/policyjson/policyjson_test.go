package policyjson

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
)

// TestReadFileKinds: a policy file is a regular file within its bound;
// anything else is refused at once, a FIFO nobody writes included.
func TestReadFileKinds(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "policy.json")
	os.WriteFile(regular, []byte(`{"format": 1}`), 0o600)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		max  int64
		code fault.Code
	}{
		{regular, 13, ""},
		{regular, 12, fault.Limit},
		{dir, 100, fault.InvalidInput},
		{fifo, 100, fault.InvalidInput},
		{filepath.Join(dir, "missing"), 100, fault.NotFound},
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(c.path, c.max, "test policy"); done <- err }()
		select {
		case err := <-done:
			if fault.CodeOf(err) != c.code && !(c.code == "" && err == nil) {
				t.Errorf("%s (bound %d): %v; want %q", c.path, c.max, err, c.code)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: ReadFile still waiting", c.path)
		}
	}
}
