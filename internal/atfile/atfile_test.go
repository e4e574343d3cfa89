package atfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/capkit/capkit/fault"
)

func openDir(t *testing.T, path string) *Dir {
	t.Helper()
	d, err := OpenDir(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestOpenRegularRefusals(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o600))
	must(t, os.Symlink("file", filepath.Join(dir, "link")))
	must(t, os.Symlink("nowhere", filepath.Join(dir, "dangling")))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	d := openDir(t, dir)
	cases := []struct {
		name string
		code fault.Code
		is   error
	}{
		{"file", "", nil},
		{"link", fault.Denied, ErrSymlink},
		{"dangling", fault.Denied, ErrSymlink},
		{"sub", fault.InvalidInput, ErrNotRegular},
		{"fifo", fault.InvalidInput, ErrNotRegular},
		{"missing", fault.NotFound, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, st, err := d.OpenRegular(c.name, "file")
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Fatalf("%v is not %v", err, c.is)
			}
			if err == nil {
				defer f.Close()
				if st.Size != 1 || !st.Mode.IsRegular() {
					t.Fatalf("stat %+v", st)
				}
			}
		})
	}
	t.Run("device", func(t *testing.T) {
		_, _, err := openDir(t, "/dev").OpenRegular("null", "file")
		if !errors.Is(err, ErrNotRegular) || fault.CodeOf(err) != fault.InvalidInput {
			t.Fatalf("device: %v", err)
		}
	})
	t.Run("not a single element", func(t *testing.T) {
		for _, n := range []string{"", ".", "..", "a/b", "a\x00"} {
			if _, _, err := d.OpenRegular(n, "file"); fault.CodeOf(err) != fault.Internal {
				t.Fatalf("%q: %v", n, err)
			}
		}
	})
}

func TestOpenSubdir(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	must(t, os.Symlink("sub", filepath.Join(dir, "link")))
	must(t, os.WriteFile(filepath.Join(dir, "file"), nil, 0o600))
	d := openDir(t, dir)
	for name, code := range map[string]fault.Code{"sub": "", "link": fault.Denied, "file": fault.InvalidInput, "none": fault.NotFound} {
		sub, _, err := d.OpenSubdir(name, "directory")
		if got := fault.CodeOf(err); got != code {
			t.Errorf("%s: code %q (%v), want %q", name, got, err, code)
		}
		if err == nil {
			sub.Close()
		}
	}
}

func TestStagingAndRename(t *testing.T) {
	dir := t.TempDir()
	d := openDir(t, dir)
	f, name, err := d.createStaging("test", false)
	must(t, err)
	if !IsStaging(name) || !HasStagingElement("a/"+name) {
		t.Fatalf("staging name %q", name)
	}
	_, err = f.WriteString("new")
	must(t, err)
	must(t, f.Close())
	st, err := d.lstat(name, "file")
	must(t, err)
	if st.Mode.Perm() != 0o600 {
		t.Fatalf("staging mode %v", st.Mode)
	}
	if _, err := d.Lstat(name, "file"); !errors.Is(err, ErrReserved) {
		t.Fatalf("Lstat of a staging name: %v", err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "state"), []byte("old"), 0o600))
	must(t, d.rename(name, "state"))
	if b, _ := os.ReadFile(filepath.Join(dir, "state")); string(b) != "new" {
		t.Fatalf("got %q", b)
	}
	must(t, d.remove("state", 0))
	if err := d.remove("state", 0); fault.CodeOf(err) != fault.NotFound {
		t.Fatalf("second remove: %v", err)
	}
	must(t, d.Sync())
}

func TestSplit(t *testing.T) {
	for _, c := range []struct{ in, dir, name string }{
		{"/a/b", "/a", "b"}, {"/a/b/", "/a", "b"}, {"/a/./b/../c", "/a", "c"}, {"/a", "/", "a"},
		{"/", "", ""}, {"a/b", "", ""}, {"", "", ""}, {"/a\x00", "", ""},
	} {
		dir, name, err := SplitParent(c.in)
		if dir != c.dir || name != c.name || (err != nil) != (c.dir == "") {
			t.Errorf("SplitParent(%q) = %q %q %v", c.in, dir, name, err)
		}
	}
}

func TestReadNamesLimit(t *testing.T) {
	dir := t.TempDir()
	for i := range 10 {
		must(t, os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), nil, 0o600))
	}
	names, err := openDir(t, dir).ReadNames(10)
	if err != nil || len(names) != 10 {
		t.Fatalf("at the limit: %d %v", len(names), err)
	}
	if _, err := openDir(t, dir).ReadNames(9); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one past: %v", err)
	}
}

func TestWalk(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "a/b"), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "a/b/f"), nil, 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "z"), nil, 0o600))
	must(t, os.Symlink("/", filepath.Join(dir, "a/root")))
	var got []string
	collect := func(rel string, depth int, st Stat, _ *Dir, _ string) (bool, error) {
		got = append(got, rel+":"+strconv.Itoa(depth))
		return true, nil
	}
	must(t, Walk(context.Background(), openDir(t, dir), WalkBounds{Names: 5, Depth: 3}, collect))
	want := "[a:1 a/b:2 a/b/f:3 a/root:2 z:1]"
	if s := fmtList(got); s != want {
		t.Fatalf("walk %s, want %s", s, want)
	}
	cases := []struct {
		names, depth int
		code         fault.Code
	}{
		{5, 3, ""},
		{4, 3, fault.Limit},
		{5, 2, fault.Limit},
	}
	for _, c := range cases {
		got = nil
		err := Walk(context.Background(), openDir(t, dir), WalkBounds{Names: c.names, Depth: c.depth}, collect)
		if fault.CodeOf(err) != c.code {
			t.Errorf("names %d depth %d: %v", c.names, c.depth, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Walk(ctx, openDir(t, dir), WalkBounds{Names: 5, Depth: 3}, collect); fault.CodeOf(err) != fault.Unavailable {
		t.Fatalf("canceled walk: %v", err)
	}
}

func fmtList(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestWalkBoundMessages: the bound a walk meets is named, per directory
// (the root as ".") or for the whole tree.
func TestWalkBoundMessages(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"f1", "f2", "f3", "d/g1", "d/g2"} {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o700))
		must(t, os.WriteFile(filepath.Join(dir, p), nil, 0o600))
	}
	none := func(string, int, Stat, *Dir, string) (bool, error) { return true, nil }
	for _, c := range []struct {
		b    WalkBounds
		want string
	}{
		{WalkBounds{Names: 10, DirNames: 2, Depth: 3}, `directory "." has more than 2 entries`},
		{WalkBounds{Names: 5, DirNames: 4, Depth: 3}, "the tree has more than 5 entries"},
		{WalkBounds{Names: 6, DirNames: 4, Depth: 3}, ""},
	} {
		err := Walk(context.Background(), openDir(t, dir), c.b, none)
		if c.want == "" && err != nil || c.want != "" && (fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.b, err, c.want)
		}
	}
}
