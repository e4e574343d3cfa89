package scope

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
)

// tempRoot is a fresh directory, symlinks resolved, holding dirs.
func tempRoot(tb testing.TB, dirs ...string) string {
	tb.Helper()
	root, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	return root
}

// protectedRoot is a root holding .git/hooks, sub/, link -> .git and
// sub/hooks -> ../.git/hooks.
func protectedRoot(tb testing.TB) string {
	tb.Helper()
	root := tempRoot(tb, ".git/hooks", "sub")
	symlink(tb, ".git", filepath.Join(root, "link"))
	symlink(tb, "../.git/hooks", filepath.Join(root, "sub", "hooks"))
	return root
}

func symlink(tb testing.TB, target, at string) {
	tb.Helper()
	if err := os.Symlink(target, at); err != nil {
		tb.Fatal(err)
	}
}

func writeFile(tb testing.TB, p, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// resolveIn is the target of p in roots with the default protected set,
// closed when the test ends.
func resolveIn(tb testing.TB, roots []string, p string) *Target {
	tb.Helper()
	t, err := In(roots, capability.Protected{}).Resolve(p)
	if err != nil {
		tb.Fatalf("Resolve(%q): %v", p, err)
	}
	tb.Cleanup(func() { t.Close() })
	return t
}

// write is a replacement writing content.
func write(content string) func(*os.File) error {
	return func(f *os.File) error { _, err := f.WriteString(content); return err }
}

// escapeFixture is a root beside an outside directory holding a marker,
// reached from the root by every kind of link.
type escapeFixture struct {
	root string
}

const marker = "OUTSIDE-MARKER"

func newEscapeFixture(tb testing.TB) *escapeFixture {
	base := tempRoot(tb, "root/sub", "outside")
	root := filepath.Join(base, "root")
	writeFile(tb, filepath.Join(base, "outside", "secret"), marker)
	writeFile(tb, filepath.Join(root, "a.txt"), "a\n")
	writeFile(tb, filepath.Join(root, "sub", "b.txt"), "b\n")
	symlink(tb, "../outside/secret", filepath.Join(root, "link-out"))
	symlink(tb, "../outside", filepath.Join(root, "dir-out"))
	symlink(tb, filepath.Join(base, "outside", "secret"), filepath.Join(root, "abs-out"))
	symlink(tb, "link-out", filepath.Join(root, "chain"))
	symlink(tb, "sub", filepath.Join(root, "sub-link"))
	return &escapeFixture{root: root}
}

// check reads, lists and looks at p in the fixture's root every way a
// target can: the outside marker never shows.
func (fx *escapeFixture) check(t *testing.T, p string) {
	tg, err := In([]string{fx.root}, capability.Protected{}).Resolve(p)
	if err != nil {
		return
	}
	defer tg.Close()
	leak := func(what string, out []byte, err error) {
		if bytes.Contains(out, []byte(marker)) || err != nil && strings.Contains(err.Error(), marker) {
			t.Fatalf("%s(%q) leaked the outside marker", what, p)
		}
	}
	data, err := tg.ReadAll(context.Background(), 1<<16, tg.Name())
	leak("ReadAll", data, err)
	if f, _, err := tg.OpenRegular("file"); err == nil {
		b := make([]byte, 64)
		n, _ := f.Read(b)
		f.Close()
		leak("OpenRegular", b[:n], nil)
	}
	if d, err := tg.OpenDir("dir"); err == nil {
		entries, _ := d.ReadEntries(context.Background(), 100, "dir")
		d.Close()
		for _, e := range entries {
			if e.Name == "secret" {
				t.Fatalf("OpenDir(%q) listed the outside directory", p)
			}
		}
	}
}
