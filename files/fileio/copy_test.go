package fileio

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/capkit/capkit/fault"
)

func TestCopy(t *testing.T) {
	cases := []struct {
		name     string
		src, dst string // relative to a fresh fixture
		maxBytes int64
		code     fault.Code
	}{
		{"new file", "abc", "copy", 10, ""},
		{"empty file", "empty", "copy", 1, ""},
		{"into a subdirectory", "abc", "sub/copy", 10, ""},
		{"size at the budget", "abc", "copy", 3, ""},
		{"size one past the budget", "abc", "copy", 2, fault.Limit},
		{"largest budget", "abc", "copy", math.MaxInt64, ""},
		{"zero budget", "abc", "copy", 0, fault.InvalidInput},
		{"existing destination", "abc", "empty", 10, fault.Conflict},
		{"destination is a symlink", "abc", "link", 10, fault.Conflict},
		{"destination is a dangling symlink", "abc", "dangling", 10, fault.Conflict},
		{"destination is a directory", "abc", "sub", 10, fault.Conflict},
		{"destination is a FIFO", "abc", "fifo", 10, fault.Conflict},
		{"destination parent missing", "abc", "none/copy", 10, fault.NotFound},
		{"destination parent is a file", "abc", "abc/copy", 10, fault.NotFound},
		{"source is a symlink", "link", "copy", 10, fault.Denied},
		{"source is a directory", "sub", "copy", 10, fault.InvalidInput},
		{"source is a FIFO", "fifo", "copy", 10, fault.InvalidInput},
		{"source missing", "nope", "copy", 10, fault.NotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := fixture(t)
			before := listing(t, dir)
			dst := filepath.Join(dir, c.dst)
			n, err := Copy(context.Background(), filepath.Join(dir, c.src), dst, c.maxBytes, nil)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if err != nil {
				if after := listing(t, dir); after != before {
					t.Fatalf("a failed copy changed the directory:\n%s\n%s", before, after)
				}
				return
			}
			want, _ := os.ReadFile(filepath.Join(dir, c.src))
			got, err := os.ReadFile(dst)
			must(t, err)
			if string(got) != string(want) || n != int64(len(want)) {
				t.Fatalf("copied %d %q, want %q", n, got, want)
			}
			st, err := os.Lstat(dst)
			must(t, err)
			if st.Mode() != 0o600 {
				t.Fatalf("copy mode %v, want private 0600", st.Mode())
			}
		})
	}
	t.Run("device source", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := Copy(context.Background(), "/dev/zero", filepath.Join(dir, "z"), 10, nil); fault.CodeOf(err) != fault.InvalidInput {
			t.Fatalf("got %v", err)
		}
		assertOnly(t, dir)
	})
}

// TestCopyDestinationAppearsDuringCopy: a destination created while the
// copy runs is never replaced.
func TestCopyDestinationAppearsDuringCopy(t *testing.T) {
	dir := fixture(t)
	dst := filepath.Join(dir, "copy")
	_, err := Copy(context.Background(), filepath.Join(dir, "abc"), dst, 10, &Options{Progress: func(int64, int64) {
		must(t, os.WriteFile(dst, []byte("someone else's"), 0o644))
	}})
	if fault.CodeOf(err) != fault.Conflict {
		t.Fatalf("got %v", err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "someone else's" {
		t.Fatalf("destination replaced: %q", b)
	}
	for _, e := range mustReadDir(t, dir) {
		if filepath.Ext(e) == ".tmp" {
			t.Fatalf("temporary file left: %s", e)
		}
	}
}

func listing(t *testing.T, dir string) string {
	t.Helper()
	var s string
	must(t, filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		s += p + " " + info.Mode().String() + "\n"
		return nil
	}))
	return s
}

func mustReadDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
