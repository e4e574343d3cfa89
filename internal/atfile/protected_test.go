package atfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
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

// acquire is AcquireRoot(root), released when the test ends.
func acquire(tb testing.TB, root string) *os.Root {
	tb.Helper()
	r, release, err := AcquireRoot(root, "root")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(release)
	return r
}

// protectedRoot is a root holding .git/hooks, sub/ and link -> .git.
func protectedRoot(t *testing.T) string {
	t.Helper()
	root := tempRoot(t, ".git/hooks", "sub")
	if err := os.Symlink(".git", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../.git/hooks", filepath.Join(root, "sub", "hooks")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestCheckBothFollowsSymlinks(t *testing.T) {
	root := protectedRoot(t)
	var p capability.Protected
	for _, c := range []struct {
		name    string
		refused bool
	}{
		{"link/config", true},
		{"link/hooks/pre-commit", true},
		{"link/new/deeper/x", true},
		{"sub/hooks/pre-commit", true},
		{"sub/x", false},
		{"missing/dir/x", false},
		{"link", false}, // the link itself is an ordinary name
	} {
		err := CheckBoth([]string{root}, root, c.name, p.CheckWrite)
		switch {
		case c.refused && (fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), "symbolic link")):
			t.Errorf("%s: %v, want denied saying it goes through a symbolic link", c.name, err)
		case !c.refused && err != nil:
			t.Errorf("%s: %v, want allowed", c.name, err)
		}
	}
}

// TestCheckOpenedBindsToTheDescriptor swaps a directory for a symlink to
// .git after it was opened: the open directory is still the old one, and
// a directory opened after the swap is .git.
func TestCheckOpenedBindsToTheDescriptor(t *testing.T) {
	root := protectedRoot(t)
	var p capability.Protected
	r := acquire(t, root)
	before, err := OpenDirIn(r, "sub")
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "sub-old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git", filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := CheckOpened([]string{root}, root, before, "config", "sub/config", p.CheckWrite); err != nil {
		t.Errorf("the directory opened before the swap: %v, want allowed (it is sub-old)", err)
	}
	after, err := OpenDirIn(r, "sub")
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	err = CheckOpened([]string{root}, root, after, "config", "sub/config", p.CheckWrite)
	if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), ".git/config is protected") {
		t.Errorf("the directory opened after the swap: %v, want denied naming .git/config", err)
	}
	if err := CheckOpened([]string{root}, root, after, "x", "sub/x", p.CheckRename); fault.CodeOf(err) != fault.Denied {
		t.Errorf("an entry of .git opened through a symlink: %v, want denied", err)
	}
}

// BenchmarkCheckBoth is the first check of a write: the name as spelled
// and as its deepest existing directory is named on disk.
func BenchmarkCheckBoth(b *testing.B) {
	root := tempRoot(b, "src/pkg")
	var p capability.Protected
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckBoth([]string{root}, root, "src/pkg/main.go", p.CheckWrite); err != nil {
			b.Fatal(err)
		}
	}
}

func TestMakeDirs(t *testing.T) {
	root := protectedRoot(t)
	if err := os.Symlink("sub", filepath.Join(root, "to-sub")); err != nil {
		t.Fatal(err)
	}
	var p capability.Protected
	r := acquire(t, root)
	for _, c := range []struct {
		rel, made string // made: the directory that must exist after, "" for a refusal
		wantMade  bool
	}{
		{"a/b/c", "a/b/c", true},
		{"a/b", "a/b", false},
		{"to-sub/x/y", "sub/x/y", true}, // a symlink inside the root is followed, as os.Root does
		{"link/new", "", false},
		{"sub/hooks/new/deeper", "", false},
		{".git/new", "", false},
		{".GIT/new", "", false},
	} {
		d, made, err := MakeDirs(r, []string{root}, root, c.rel, 0o755, p.CheckWrite)
		if c.made == "" {
			if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), "protected") {
				t.Errorf("%s: %v, want denied", c.rel, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.rel, err)
			continue
		}
		d.Close()
		if made != c.wantMade {
			t.Errorf("%s: made %v, want %v", c.rel, made, c.wantMade)
		}
		if st, err := os.Lstat(filepath.Join(root, c.made)); err != nil || !st.IsDir() {
			t.Errorf("%s: %s is not a directory: %v", c.rel, c.made, err)
		}
	}
	for _, p := range []string{".git/new", ".git/hooks/new", ".GIT"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s was made", p)
		}
	}
}

// BenchmarkCheckOpened is the check on the directory a write is made
// through.
func BenchmarkCheckOpened(b *testing.B) {
	root := tempRoot(b, "src/pkg")
	r := acquire(b, root)
	d, err := OpenDirIn(r, "src/pkg")
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	var p capability.Protected
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckOpened([]string{root}, root, d, "main.go", "src/pkg/main.go", p.CheckWrite); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCheckOpenedCoversNestedRoots opens, through root A, a symlink to
// the .git of a root nested in A: the check on the opened directory is
// given both roots, so it refuses what the nested root protects, as the
// check by name does.
func TestCheckOpenedCoversNestedRoots(t *testing.T) {
	root := protectedRoot(t)
	nested := filepath.Join(root, "sub")
	if err := os.MkdirAll(filepath.Join(nested, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/.git", filepath.Join(root, "nested-git")); err != nil {
		t.Fatal(err)
	}
	roots := []string{root, nested}
	var p capability.Protected
	r := acquire(t, root)
	d, err := OpenDirIn(r, "nested-git/hooks")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = CheckOpened(roots, root, d, "pre-commit", "nested-git/hooks/pre-commit", p.CheckWrite)
	if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), "sub/.git/hooks/pre-commit is protected") {
		t.Errorf("CheckOpened through a symlink into the nested root's .git: %v, want denied naming sub/.git/hooks/pre-commit", err)
	}
	if _, _, err := MakeDirs(r, roots, root, "nested-git/new", 0o755, p.CheckWrite); fault.CodeOf(err) != fault.Denied {
		t.Errorf("MakeDirs through a symlink into the nested root's .git: %v, want denied", err)
	}
	if _, err := os.Lstat(filepath.Join(nested, ".git", "new")); err == nil {
		t.Error("sub/.git/new was made")
	}
}

// TestCheckOpenedPathTooLong makes directories until their host path is
// longer than the kernel names: the change there is refused with limit,
// saying why, and the directory it would have made is not made.
func TestCheckOpenedPathTooLong(t *testing.T) {
	root := protectedRoot(t)
	var p capability.Protected
	r := acquire(t, root)
	elem := strings.Repeat("d", 250)
	rel := elem
	for len(root)+len(rel) < 2*unix.PathMax {
		d, _, err := MakeDirs(r, []string{root}, root, rel, 0o755, p.CheckWrite)
		if err != nil {
			if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "too long for the kernel to name") {
				t.Fatalf("a directory at %d bytes: %v, want limit saying the path is too long", len(root)+len(rel), err)
			}
			if _, err := r.Stat(rel); err == nil {
				t.Errorf("the directory at %d bytes was made", len(root)+len(rel))
			}
			return
		}
		d.Close()
		rel += "/" + elem
	}
	t.Fatalf("directories of %d bytes were made and checked", len(root)+len(rel))
}
