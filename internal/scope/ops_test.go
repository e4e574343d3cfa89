package scope

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func TestOpenFollowing(t *testing.T) {
	fx := newEscapeFixture(t)
	root := fx.root
	symlink(t, "sub/b.txt", filepath.Join(root, "to-b"))
	symlink(t, "to-b", filepath.Join(root, "to-to-b"))
	symlink(t, ".", filepath.Join(root, "self"))
	loop := "loop0"
	for i := range limits.SymlinkMaxHops + 1 {
		symlink(t, "loop"+string(rune('a'+i)), filepath.Join(root, loop))
		loop = "loop" + string(rune('a'+i))
	}
	for _, c := range []struct {
		name, content string
		code          fault.Code
	}{
		{"a.txt", "a\n", ""},
		{"to-b", "b\n", ""},
		{"to-to-b", "b\n", ""},
		{"sub-link/b.txt", "b\n", ""},
		{"link-out", "", fault.Denied},
		{"abs-out", "", fault.Denied},
		{"chain", "", fault.Denied},
		{"dir-out/secret", "", fault.Denied},
		{"self", "", fault.InvalidInput},
		{"sub", "", fault.InvalidInput},
		{".", "", fault.InvalidInput},
		{"loop0", "", fault.Denied},
		{"missing", "", fault.NotFound},
	} {
		data, err := resolveIn(t, []string{root}, c.name).ReadAll(context.Background(), 100, c.name)
		if fault.CodeOf(err) != c.code || string(data) != c.content {
			t.Errorf("ReadAll(%s) = %q, %v; want %q, code %q", c.name, data, err, c.content, c.code)
		}
	}
	if _, _, err := resolveIn(t, []string{root}, "to-b").OpenRegular("to-b"); !errors.Is(err, ErrSymlink) {
		t.Errorf("OpenRegular of a symlink: %v, want refused as one", err)
	}
	if _, err := resolveIn(t, []string{root}, "a.txt").ReadAll(context.Background(), 1, "a.txt"); fault.CodeOf(err) != fault.Limit {
		t.Errorf("ReadAll past its bound: %v, want limit", err)
	}
}

func TestOpenDirAndTree(t *testing.T) {
	fx := newEscapeFixture(t)
	roots := []string{fx.root}
	if d, err := resolveIn(t, roots, "sub-link").OpenDir("sub-link"); err != nil {
		t.Errorf("OpenDir of a symlink inside the root: %v, want it followed", err)
	} else {
		d.Close()
	}
	if _, _, err := resolveIn(t, roots, "sub-link").OpenTree("directory"); !errors.Is(err, ErrSymlink) {
		t.Errorf("OpenTree of a symlink: %v, want refused", err)
	}
	if _, err := resolveIn(t, roots, "a.txt").OpenDir("a.txt"); !errors.Is(err, ErrNotDir) {
		t.Errorf("OpenDir of a file: %v, want not a directory", err)
	}
	d, st, err := resolveIn(t, roots, ".").OpenTree("directory")
	if err != nil || !st.Mode.IsDir() {
		t.Fatalf("OpenTree of the root: %v %v", st.Mode, err)
	}
	var names []string
	err = Walk(context.Background(), d, WalkBounds{Names: 100, Depth: 5}, func(rel string, _ int, st Stat, parent *Dir, name string) (bool, error) {
		names = append(names, rel)
		return st.Mode.IsDir(), nil
	})
	d.Close()
	if err != nil || strings.Join(names, " ") != "a.txt abs-out chain dir-out link-out sub sub/b.txt sub-link" {
		t.Errorf("Walk: %v %v", names, err)
	}
}

func TestRenameTo(t *testing.T) {
	root := tempRoot(t, "a")
	roots := []string{root}
	writeFile(t, filepath.Join(root, "a", "f"), "f")
	writeFile(t, filepath.Join(root, "taken"), "t")
	ctx := context.Background()
	if err := resolveIn(t, roots, "a/f").RenameTo(ctx, resolveIn(t, roots, "taken"), nil); fault.CodeOf(err) != fault.Conflict {
		t.Errorf("over an existing name: %v, want conflict", err)
	}
	if err := resolveIn(t, roots, "a/f").RenameTo(ctx, resolveIn(t, roots, "new/deeper/g"), nil); fault.CodeOf(err) != fault.NotFound {
		t.Errorf("into a missing directory: %v, want not_found", err)
	}
	if err := resolveIn(t, roots, "a/f").RenameTo(ctx, resolveIn(t, roots, "new/deeper/g"), &RenameOptions{MakeParents: true}); err != nil {
		t.Fatal(err)
	}
	if err := resolveIn(t, roots, "new/deeper/g").RenameTo(ctx, resolveIn(t, roots, "new/deeper/h"), nil); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "new", "deeper", "h")); err != nil || string(b) != "f" {
		t.Errorf("renamed file: %q %v", b, err)
	}
	other := tempRoot(t)
	if err := resolveIn(t, roots, "taken").RenameTo(ctx, resolveIn(t, []string{other}, "x"), nil); fault.CodeOf(err) != fault.InvalidInput {
		t.Errorf("across roots: %v, want invalid_input", err)
	}
}

func TestCreateDir(t *testing.T) {
	root := tempRoot(t)
	roots := []string{root}
	ctx := context.Background()
	fill := func(s *Staged) error {
		if err := s.Mkdir("d"); err != nil {
			return err
		}
		f, err := s.Create("d/f")
		if err != nil {
			return err
		}
		f.WriteString("content")
		f.Close()
		return s.Sync("d")
	}
	if err := resolveIn(t, roots, "out").CreateDir(ctx, "test", fill); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "out", "d", "f")); err != nil || string(b) != "content" {
		t.Errorf("out/d/f: %q %v", b, err)
	}
	if err := resolveIn(t, roots, "out").CreateDir(ctx, "test", fill); fault.CodeOf(err) != fault.Conflict {
		t.Errorf("over an existing directory: %v, want conflict", err)
	}
	boom := fault.New(fault.Integrity, "boom")
	if err := resolveIn(t, roots, "failed").CreateDir(ctx, "test", func(s *Staged) error { fill(s); return boom }); err != boom {
		t.Errorf("a failing fill: %v, want its error", err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
	if err := resolveIn(t, roots, "x").CreateDir(ctx, "test", func(s *Staged) error { _, err := s.Create("../escape"); return err }); err == nil {
		t.Error("a staged name climbing out was created")
	}
}

func TestOpenForChanges(t *testing.T) {
	root := tempRoot(t, "j")
	c, err := resolveIn(t, []string{root}, "j").OpenForChanges("a.jsonl", "a.lock")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.OpenFile("a.lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := c.OpenFile("other", os.O_RDWR|os.O_CREATE, 0o600); fault.CodeOf(err) != fault.Internal {
		t.Errorf("a name not checked: %v, want refused", err)
	}
	symlink(t, "/etc/passwd", filepath.Join(root, "j", "a.jsonl"))
	if _, err := c.OpenFile("a.jsonl", os.O_RDWR, 0); !errors.Is(err, ErrSymlink) {
		t.Errorf("a symlink: %v, want refused", err)
	}
}

// TestPinSurvivesASwap pins a directory, then renames it away and puts a
// symlink to a protected directory at its name: the pinned path still
// reaches the pinned directory, and nothing appears where the link leads.
func TestPinSurvivesASwap(t *testing.T) {
	root := protectedRoot(t)
	if err := os.Mkdir(filepath.Join(root, "ix"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := resolveIn(t, []string{root}, "ix/db").Pin("-wal")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := os.Rename(filepath.Join(root, "ix"), filepath.Join(root, "ix-away")); err != nil {
		t.Fatal(err)
	}
	symlink(t, ".git", filepath.Join(root, "ix"))
	for _, name := range []string{p.Path(), p.Path() + "-wal"} {
		if err := os.WriteFile(name, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"db", "db-wal"} {
		if _, err := os.Stat(filepath.Join(root, "ix-away", name)); err != nil {
			t.Errorf("%s is not in the pinned directory: %v", name, err)
		}
		if _, err := os.Lstat(filepath.Join(root, ".git", name)); err == nil {
			t.Errorf(".git/%s was made", name)
		}
	}
	if st, err := p.Lstat("-wal", "db-wal"); err != nil || !st.Mode.IsRegular() {
		t.Errorf("Lstat(-wal): %v %v", st.Mode, err)
	}
}

// TestHost: a host target follows symlinks before its last element and
// checks no protected path.
func TestHost(t *testing.T) {
	root := protectedRoot(t)
	h, err := Host(filepath.Join(root, "link", "config"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.Replace(context.Background(), write("x"), nil); err != nil {
		t.Fatalf("a host path through a symlink: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(root, ".git", "config")); err != nil || string(b) != "x" {
		t.Errorf(".git/config: %q %v", b, err)
	}
	if _, err := Host("relative"); fault.CodeOf(err) != fault.InvalidInput {
		t.Errorf("a relative host path: %v", err)
	}
	top, err := Host("/")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := top.Lstat("/"); err != nil || !st.Mode.IsDir() {
		t.Errorf("Lstat of /: %v %v", st.Mode, err)
	}
}
