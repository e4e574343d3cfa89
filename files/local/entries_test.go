package local

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/internal/scope"
)

// A listing's types, read from the directory, are what lstat says, for
// every kind of entry; staging files are left out.
func TestReadDirTypes(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(f.root, "kinds")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, mk := range []func() error{
		func() error { return os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o600) },
		func() error { return os.Mkdir(filepath.Join(dir, "sub"), 0o755) },
		func() error { return os.Symlink("file", filepath.Join(dir, "link")) },
		func() error { return os.Symlink("/nowhere", filepath.Join(dir, "dangling")) },
		func() error { return unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600) },
		func() error { return os.WriteFile(filepath.Join(dir, scope.StagingPrefix+"x"), nil, 0o600) },
	} {
		if err := mk(); err != nil {
			t.Fatal(err)
		}
	}
	entries, total, err := readDir(f.p, ctx(t), in(f.root), "kinds", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"kinds/dangling", "kinds/fifo", "kinds/file", "kinds/link", "kinds/sub"}
	if total != len(want) || len(entries) != len(want) {
		t.Fatalf("%d entries (total %d): %+v", len(entries), total, entries)
	}
	for i, e := range entries {
		if e.Name != want[i] {
			t.Fatalf("entry %d is %q, want %q", i, e.Name, want[i])
		}
		fi, err := os.Lstat(filepath.Join(f.root, e.Name))
		if err != nil {
			t.Fatal(err)
		}
		if e.Type != fi.Mode().Type() {
			t.Errorf("%s: type %v, lstat says %v", e.Name, e.Type, fi.Mode().Type())
		}
	}
}
