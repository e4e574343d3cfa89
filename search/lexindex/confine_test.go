package lexindex

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
)

// TestReachedThroughItsDirectory: an index the tools open is named, to
// SQLite, by its pinned directory's descriptor, so the database and the
// files SQLite makes beside it later are opened there whatever is
// swapped on the way. It failed before: the tools handed SQLite the host
// path, which it resolved itself at every open.
func TestReachedThroughItsDirectory(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{".git", "ix"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	ix, err := openIn(ctx, scope.In([]string{root}, capability.Protected{}), "ix/docs.db", true)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var seq int
	var name, file string
	if err := ix.conn.QueryRowContext(ctx, `PRAGMA database_list`).Scan(&seq, &name, &file); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(file, "/proc/") || strings.HasPrefix(file, root) {
		t.Errorf("SQLite names the index %q; want its directory's descriptor path, not the host path", file)
	}
	if err := os.Rename(filepath.Join(root, "ix"), filepath.Join(root, "ix-away")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git", filepath.Join(root, "ix")); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Apply(ctx, []Mutation{{Ref: "a", Text: "some text"}}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, ".git")); len(entries) > 0 {
		t.Errorf(".git holds %v", entries)
	}
	_, err = openIn(ctx, scope.In([]string{root}, capability.Protected{}), "ix/docs.db", true)
	if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), "protected") {
		t.Errorf("an index through the link to .git: %v, want denied as protected", err)
	}
}
