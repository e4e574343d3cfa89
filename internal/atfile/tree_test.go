//go:build linux

package atfile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// plantTree writes under dir what a command might leave: a read-only
// directory holding files (as a Go module cache does), a directory with
// no permission at all holding a large file, a FIFO, and a symbolic
// link to a file outside the tree. It returns the link's target and the
// large file's size.
func plantTree(t *testing.T, dir string) (target string, big int64) {
	t.Helper()
	target = filepath.Join(t.TempDir(), "outside")
	must(t, os.WriteFile(target, []byte("keep"), 0o644))
	big = 256 << 10
	for _, d := range []string{"mod/m@v1/sub", "closed/inner"} {
		must(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(dir, "mod/m@v1/sub/a.go"), []byte("package a\n"), 0o444))
	must(t, os.WriteFile(filepath.Join(dir, "closed/inner/big"), make([]byte, big), 0o600))
	must(t, syscall.Mkfifo(filepath.Join(dir, "closed/fifo"), 0o600))
	must(t, os.Symlink(target, filepath.Join(dir, "mod/link")))
	for _, d := range []string{"mod/m@v1/sub", "mod/m@v1", "mod"} {
		must(t, os.Chmod(filepath.Join(dir, d), 0o555))
	}
	must(t, os.Chmod(filepath.Join(dir, "closed/inner"), 0))
	must(t, os.Chmod(filepath.Join(dir, "closed"), 0))
	return target, big
}

func TestRemoveAllWhateverTheModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	target, big := plantTree(t, dir)
	n, err := Usage(t.Context(), dir)
	if err != nil || n < big {
		t.Fatalf("Usage = %d, %v; want at least the %d bytes behind the closed directory", n, err, big)
	}
	if err := RemoveAll(t.Context(), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("the tree is still there: %v", err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep" {
		t.Errorf("the link's target was touched: %q, %v", b, err)
	}
	if err := RemoveAll(t.Context(), dir); err != nil {
		t.Errorf("a missing tree: %v", err)
	}
	if n, err := Usage(t.Context(), dir); n != 0 || err != nil {
		t.Errorf("Usage of a missing tree = %d, %v", n, err)
	}
}

// A symbolic link given as the tree is removed itself, never followed.
func TestRemoveAllLinkNotFollowed(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Mkdir(filepath.Join(dir, "real"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "real/f"), nil, 0o644))
	must(t, os.Symlink("real", filepath.Join(dir, "link")))
	if err := RemoveAll(t.Context(), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "real/f")); err != nil {
		t.Errorf("the link was followed: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "link")); !os.IsNotExist(err) {
		t.Errorf("the link is still there: %v", err)
	}
}

// The walk goes limits.TreeHardDepth levels deep and fails with limit
// one past it.
func TestRemoveAllDepthBound(t *testing.T) {
	for _, tc := range []struct {
		levels int
		code   fault.Code
	}{{limits.TreeHardDepth, ""}, {limits.TreeHardDepth + 1, fault.Limit}} {
		dir := filepath.Join(t.TempDir(), "top")
		must(t, os.MkdirAll(filepath.Join(dir, strings.Repeat("d/", tc.levels)), 0o755))
		if _, err := Usage(t.Context(), dir); fault.CodeOf(err) != tc.code {
			t.Errorf("%d levels: Usage err = %v, want %q", tc.levels, err, tc.code)
		}
		if err := RemoveAll(t.Context(), dir); fault.CodeOf(err) != tc.code {
			t.Errorf("%d levels: RemoveAll err = %v, want %q", tc.levels, err, tc.code)
		}
	}
}

func TestRemoveAllCanceled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	must(t, os.MkdirAll(filepath.Join(dir, "a"), 0o755))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := RemoveAll(ctx, dir); fault.CodeOf(err) != fault.Limit {
		t.Errorf("err = %v, want limit", err)
	}
}
