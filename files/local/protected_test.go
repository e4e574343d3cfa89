package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/internal/testkit"
)

// TestProtectedPaths drives the provider itself (no tool in front, no
// check before the change): a write, move or mkdir of a protected path,
// as spelled or through a symlink into .git, is denied by the scope's
// target it is made through and leaves the root as it was.
func TestProtectedPaths(t *testing.T) {
	root := filepath.Join(testkit.TempDir(t), "root")
	for _, d := range []string{".git/hooks", "sub"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	p := New()
	sc := scope.In([]string{root}, capability.NewProtected(".envrc"))
	names := func() string {
		var out []string
		filepath.WalkDir(root, func(path string, _ os.DirEntry, _ error) error { out = append(out, path); return nil })
		return strings.Join(out, "\n")
	}
	before := names()
	for _, c := range []struct {
		op  string
		err error
	}{
		{"write .git/config", writeErr(t, p, sc, ".git/config")},
		{"write capkit.toml", writeErr(t, p, sc, "capkit.toml")},
		{"write .envrc", writeErr(t, p, sc, ".envrc")},
		{"write link/hooks/pre-commit", writeErr(t, p, sc, "link/hooks/pre-commit")},
		{"write link/new/x", writeErr(t, p, sc, "link/new/x")},
		{"move .git away", move(p, ctx(t), sc, ".git", "old-git")},
		{"move onto .git/a", move(p, ctx(t), sc, "a.txt", ".git/a")},
		{"move into link/a", move(p, ctx(t), sc, "a.txt", "link/a")},
		{"mkdir .git/new", mkdirErr(t, p, sc, ".git/new")},
		{"mkdir link/new", mkdirErr(t, p, sc, "link/new")},
	} {
		if fault.CodeOf(c.err) != fault.Denied || !strings.Contains(c.err.Error(), "protected") {
			t.Errorf("%s: %v, want denied saying the path is protected", c.op, c.err)
		}
	}
	if after := names(); after != before {
		t.Errorf("refused changes changed the root:\n%s\nwas\n%s", after, before)
	}
	if _, err := write(p, ctx(t), sc, "sub/ok.txt", []byte("ok"), nil); err != nil {
		t.Errorf("an ordinary write: %v", err)
	}
}

func writeErr(t *testing.T, p *Provider, sc *scope.Scope, name string) error {
	_, err := write(p, ctx(t), sc, name, []byte("evil"), nil)
	return err
}

func mkdirErr(t *testing.T, p *Provider, sc *scope.Scope, name string) error {
	_, err := makeDir(p, ctx(t), sc, name)
	return err
}

// TestProtectedNameWhenGitIsALink: a .git that is itself a symbolic link
// (into the root) is protected by its name too: the provider alone, with
// no tool in front and no resolution of the link at start-up, refuses a
// write or a mkdir in it (the target's check by name).
func TestProtectedNameWhenGitIsALink(t *testing.T) {
	root := filepath.Join(testkit.TempDir(t), "root")
	if err := os.MkdirAll(filepath.Join(root, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(root, ".git")); err != nil {
		t.Fatal(err)
	}
	p := New()
	sc := scope.In([]string{root}, capability.NewProtected())
	for op, err := range map[string]error{
		"write .git/config": writeErr(t, p, sc, ".git/config"),
		"mkdir .git/hooks":  mkdirErr(t, p, sc, ".git/hooks"),
	} {
		if fault.CodeOf(err) != fault.Denied {
			t.Errorf("%s: %v, want denied", op, err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "real")); len(entries) != 0 {
		t.Errorf("the link's target got %d entries", len(entries))
	}
}
