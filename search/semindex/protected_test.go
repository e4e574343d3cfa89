package semindex

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
)

// TestOpenInNestedRootProtected: with roots A and A/sub, no index is
// opened in A/sub/.git, spelled so or reached through a symlink in A.
func TestOpenInNestedRootProtected(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(base, "root")
	b := filepath.Join(a, "sub")
	if err := os.MkdirAll(filepath.Join(b, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/.git", filepath.Join(a, "link")); err != nil {
		t.Fatal(err)
	}
	opts := &OpenOptions{Protected: capability.NewProtected()}
	for _, p := range []string{"sub/.git/x.db", "link/x.db"} {
		ix, err := OpenIn(context.Background(), []string{a, b}, p, opts)
		if err == nil {
			ix.Close()
		}
		if fault.CodeOf(err) != fault.Denied {
			t.Errorf("%s: %v, want denied", p, err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(b, ".git")); len(ents) != 0 {
		t.Errorf("files were made in the nested root's .git: %v", ents)
	}
}

// TestReachedThroughItsDirectory: SQLite names an index OpenIn opened by
// its pinned directory's descriptor, so every file it opens there later
// (-wal, -shm, a new connection's) goes through the descriptor. It failed
// before: the descriptor path was handed to SQLite, which resolved it to
// the directory's host path at open.
func TestReachedThroughItsDirectory(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ix, err := OpenIn(context.Background(), []string{root}, "x.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var seq int
	var name, file string
	if err := ix.db.QueryRow(`PRAGMA database_list`).Scan(&seq, &name, &file); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(file, "/proc/") || strings.HasPrefix(file, root) {
		t.Errorf("SQLite names the index %q; want its directory's descriptor path, not the host path", file)
	}
}
