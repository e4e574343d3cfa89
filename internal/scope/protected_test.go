package scope

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
)

func refusedAsLink(err error) bool {
	return fault.CodeOf(err) == fault.Denied && strings.Contains(err.Error(), "symbolic link")
}

func TestCheckWriteFollowsSymlinks(t *testing.T) {
	root := protectedRoot(t)
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
		err := resolveIn(t, []string{root}, c.name).CheckWrite()
		switch {
		case c.refused && !refusedAsLink(err):
			t.Errorf("%s: %v, want denied saying it goes through a symbolic link", c.name, err)
		case !c.refused && err != nil:
			t.Errorf("%s: %v, want allowed", c.name, err)
		}
	}
	for _, name := range []string{".git/config", ".GIT/hooks/x", "capkit.toml"} {
		if err := resolveIn(t, []string{root}, name).CheckWrite(); fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), "is protected") {
			t.Errorf("%s: %v, want denied as protected", name, err)
		}
	}
}

// TestCheckBindsToTheDescriptor swaps a directory for a symlink to .git
// after a target opened it: the change goes through the directory it
// opened (the old one, allowed), and a target resolved after the swap is
// refused, by CheckWrite and by the change itself.
func TestCheckBindsToTheDescriptor(t *testing.T) {
	root := protectedRoot(t)
	before := resolveIn(t, []string{root}, "sub/config")
	if err := before.CheckWrite(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "sub-old")); err != nil {
		t.Fatal(err)
	}
	symlink(t, ".git", filepath.Join(root, "sub"))
	if err := before.Replace(context.Background(), write("x"), nil); err != nil {
		t.Errorf("the directory opened before the swap: %v, want allowed (it is sub-old)", err)
	}
	if _, err := os.Stat(filepath.Join(root, "sub-old", "config")); err != nil {
		t.Errorf("the replacement is not in sub-old: %v", err)
	}
	after := resolveIn(t, []string{root}, "sub/config")
	if err := after.Replace(context.Background(), write("x"), nil); fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), ".git/config is protected") {
		t.Errorf("a replacement through the swapped directory: %v, want denied naming .git/config", err)
	}
	if err := resolveIn(t, []string{root}, "sub/x").CheckRename(); fault.CodeOf(err) != fault.Denied {
		t.Errorf("an entry of .git reached through a symlink: %v, want denied", err)
	}
	if _, err := os.Stat(filepath.Join(root, ".git", "config")); err == nil {
		t.Error(".git/config was written")
	}
}

// TestCheckedOnce: a target checks its parent once; every later change
// through it uses that check and that descriptor.
func TestCheckedOnce(t *testing.T) {
	root := tempRoot(t, "src")
	tg := resolveIn(t, []string{root}, "src/f")
	if err := tg.CheckWrite(); err != nil {
		t.Fatal(err)
	}
	parent := tg.parent
	if parent == nil || tg.checked != writeCheck {
		t.Fatalf("CheckWrite left parent %v, checked %v", parent, tg.checked)
	}
	for range 2 {
		if err := tg.Replace(context.Background(), write("x"), nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := tg.OpenRegular("f"); err != nil {
			t.Fatal(err)
		}
	}
	if tg.parent != parent {
		t.Error("the parent was opened again")
	}
}

func TestMakeDirs(t *testing.T) {
	root := protectedRoot(t)
	symlink(t, "sub", filepath.Join(root, "to-sub"))
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
		made, err := resolveIn(t, []string{root}, c.rel).MakeDirs(0o755)
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

// TestChecksCoverNestedRoots reaches, through root A, the .git of a root
// nested in A by a symlink: each change knows every root of the scope,
// so it refuses what the nested root protects.
func TestChecksCoverNestedRoots(t *testing.T) {
	root := protectedRoot(t)
	nested := filepath.Join(root, "sub")
	if err := os.MkdirAll(filepath.Join(nested, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "sub/.git", filepath.Join(root, "nested-git"))
	roots := []string{root, nested}
	tg := resolveIn(t, roots, "nested-git/hooks/pre-commit")
	if err := tg.Replace(context.Background(), write("#!/bin/sh\n"), nil); fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), "sub/.git/hooks/pre-commit is protected") {
		t.Errorf("a replacement through a symlink into the nested root's .git: %v, want denied naming sub/.git/hooks/pre-commit", err)
	}
	if _, err := resolveIn(t, roots, "nested-git/new").MakeDirs(0o755); fault.CodeOf(err) != fault.Denied {
		t.Errorf("MakeDirs through a symlink into the nested root's .git: %v, want denied", err)
	}
	for _, p := range []string{"new", "hooks/pre-commit"} {
		if _, err := os.Lstat(filepath.Join(nested, ".git", p)); err == nil {
			t.Errorf("sub/.git/%s was made", p)
		}
	}
}

// TestPathTooLong makes directories until their host path is longer than
// the kernel names: the change there is refused with limit, saying why,
// and the directory it would have made is not made. The root's own path
// is long, so that a name Resolve accepts (limits.PathMaxBytes) gets
// there.
func TestPathTooLong(t *testing.T) {
	root := filepath.Join(protectedRoot(t), strings.Repeat("r", 250), strings.Repeat("r", 250))
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	elem := strings.Repeat("d", 250)
	rel := elem
	for len(root)+len(rel) < 2*unix.PathMax {
		_, err := resolveIn(t, []string{root}, rel).MakeDirs(0o755)
		if err != nil {
			if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "too long for the kernel to name") {
				t.Fatalf("a directory at %d bytes: %v, want limit saying the path is too long", len(root)+len(rel), err)
			}
			if _, err := os.Stat(filepath.Join(root, rel)); err == nil {
				t.Errorf("the directory at %d bytes was made", len(root)+len(rel))
			}
			return
		}
		rel += "/" + elem
	}
	t.Fatalf("directories of %d bytes were made and checked", len(root)+len(rel))
}

// TestEveryChangeChecks: each kind of change to a protected path, spelled
// or through a symlink, is refused and changes nothing.
func TestEveryChangeChecks(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{".git/x", "link/x", "sub/hooks/x"} {
		root := protectedRoot(t)
		writeFile(t, filepath.Join(root, "free"), "f")
		roots := []string{root}
		denied := func(what string, err error) {
			t.Helper()
			if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), "protected") {
				t.Errorf("%s %s: %v, want denied as protected", what, name, err)
			}
		}
		denied("Replace", resolveIn(t, roots, name).Replace(ctx, write("x"), &ReplaceOptions{MakeParents: true}))
		denied("MakeDirs", func() error { _, err := resolveIn(t, roots, name+"/d").MakeDirs(0o755); return err }())
		denied("RenameTo (to)", resolveIn(t, roots, "free").RenameTo(ctx, resolveIn(t, roots, name), nil))
		denied("CreateDir", resolveIn(t, roots, name).CreateDir(ctx, "test", func(*Staged) error { return nil }))
		denied("OpenForChanges", func() error { _, err := resolveIn(t, roots, filepath.Dir(name)).OpenForChanges("x"); return err }())
		denied("Pin", func() error { _, err := resolveIn(t, roots, name).Pin("-wal"); return err }())
		if _, err := os.Lstat(filepath.Join(root, ".git", "x")); err == nil {
			t.Errorf("%s: .git/x was made", name)
		}
	}
	root := protectedRoot(t)
	if err := resolveIn(t, []string{root}, ".git").RenameTo(ctx, resolveIn(t, []string{root}, "git-away"), nil); fault.CodeOf(err) != fault.Denied {
		t.Errorf("renaming .git away: %v, want denied", err)
	}
	if err := resolveIn(t, []string{root}, "sub").RenameTo(ctx, resolveIn(t, []string{root}, "sub2"), nil); err != nil {
		t.Errorf("renaming sub, which holds only a link to .git/hooks: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Error(".git moved")
	}
}

// BenchmarkCheckWrite is a change's check: a target resolved, its parent
// opened, its name checked as spelled and as the parent is named on disk.
func BenchmarkCheckWrite(b *testing.B) {
	root := tempRoot(b, "src/pkg")
	sc := In([]string{root}, capability.Protected{})
	b.ReportAllocs()
	for b.Loop() {
		t, err := sc.Resolve("src/pkg/main.go")
		if err != nil {
			b.Fatal(err)
		}
		if err := t.CheckWrite(); err != nil {
			b.Fatal(err)
		}
		t.Close()
	}
}
