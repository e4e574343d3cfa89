package atfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// A sweep removes staging entries whose writer is gone (file, directory,
// planted symlink) and leaves a live writer's locked one and every other
// name alone.
func TestSweepRemovesOnlyStale(t *testing.T) {
	dir := t.TempDir()
	d := openDir(t, dir)
	live, liveName, err := d.createStaging("live", false)
	must(t, err)
	defer live.Close()
	dead, deadName, err := d.createStaging("dead", false)
	must(t, err)
	must(t, dead.Close()) // the writer is gone: its lock with it
	must(t, os.MkdirAll(filepath.Join(dir, StagingPrefix+"zip-old", "a", "b"), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, StagingPrefix+"zip-old", "a", "b", "m"), []byte("x"), 0o600))
	must(t, os.Symlink("/etc/passwd", filepath.Join(dir, StagingPrefix+"planted")))
	must(t, os.WriteFile(filepath.Join(dir, "keep"), []byte("x"), 0o600))
	n, err := d.sweep(context.Background())
	must(t, err)
	if n != 3 {
		t.Errorf("removed %d, want 3", n)
	}
	for name, want := range map[string]bool{liveName: true, deadName: false, StagingPrefix + "zip-old": false, StagingPrefix + "planted": false, "keep": true} {
		if _, err := os.Lstat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", name, err == nil, want)
		}
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Fatal("the planted symlink's target was touched")
	}
}

// Listings, walks and opens never show a staging name; a writer never
// takes a live staging file's name.
func TestStagingHidden(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, StagingPrefix+"x"), []byte("x"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "a"), []byte("x"), 0o600))
	names, err := openDir(t, dir).ReadNames(10)
	must(t, err)
	entries, err := openDir(t, dir).ReadEntries(context.Background(), 10, "dir")
	must(t, err)
	if len(names) != 1 || names[0] != "a" || len(entries) != 1 || entries[0].Name != "a" {
		t.Fatalf("names %q entries %v", names, entries)
	}
	d := openDir(t, dir)
	for _, op := range []func() error{
		func() error { _, err := d.Lstat(StagingPrefix+"x", "f"); return err },
		func() error { _, _, err := d.OpenRegular(StagingPrefix+"x", "f"); return err },
		func() error { _, _, err := d.OpenSubdir(StagingPrefix+"x", "f"); return err },
		func() error { return d.Replace(context.Background(), StagingPrefix+"y", nil, nil) },
	} {
		if err := op(); !errors.Is(err, ErrReserved) || fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("staging name: %v, want invalid_input (reserved)", err)
		}
	}
}

// Replace: a new file gets opts.Mode, an existing one keeps its mode; a
// Check or write failure and NoReplace over an existing file leave the
// target and no staging file behind.
func TestReplace(t *testing.T) {
	dir := t.TempDir()
	d := openDir(t, dir)
	ctx := context.Background()
	put := func(s string) func(*os.File) error {
		return func(f *os.File) error { _, err := f.WriteString(s); return err }
	}
	must(t, d.Replace(ctx, "new", put("one"), &ReplaceOptions{Mode: 0o640}))
	must(t, os.Chmod(filepath.Join(dir, "new"), 0o604))
	must(t, d.Replace(ctx, "new", put("two"), nil))
	veto := errors.New("veto")
	cases := []struct {
		name string
		opts *ReplaceOptions
		w    func(*os.File) error
		code fault.Code
	}{
		{"check vetoes", &ReplaceOptions{Check: func(bool, Stat) error { return fault.Wrap(fault.Conflict, veto, "no") }}, put("x"), fault.Conflict},
		{"write fails", nil, func(*os.File) error { return fault.New(fault.Limit, "too big") }, fault.Limit},
		{"no replace", &ReplaceOptions{NoReplace: true}, put("x"), fault.Conflict},
	}
	for _, c := range cases {
		if err := d.Replace(ctx, "new", c.w, c.opts); fault.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "new"))
	st, _ := os.Stat(filepath.Join(dir, "new"))
	if string(b) != "two" || st.Mode().Perm() != 0o604 {
		t.Fatalf("content %q mode %v, want two 0604", b, st.Mode().Perm())
	}
	all, _ := os.ReadDir(dir)
	for _, e := range all {
		if IsStaging(e.Name()) {
			t.Fatalf("staging file left: %s", e.Name())
		}
	}
	must(t, os.Symlink("new", filepath.Join(dir, "link")))
	if err := d.Replace(ctx, "link", put("x"), nil); !errors.Is(err, ErrSymlink) {
		t.Fatalf("replace through a symlink: %v", err)
	}
}

// The memory of swept directories is bounded by limits.StagingSweptDirs:
// at the bound it holds them all, one more clears it.
func TestSweptDirsBound(t *testing.T) {
	swept.Lock()
	clear(swept.m)
	for i := range limits.StagingSweptDirs - 1 {
		swept.m[[3]uint64{1 << 40, uint64(i), 0}] = struct{}{}
	}
	swept.Unlock()
	a, b := openDir(t, t.TempDir()), openDir(t, t.TempDir())
	a.sweepOnce(context.Background())
	swept.Lock()
	at := len(swept.m)
	swept.Unlock()
	b.sweepOnce(context.Background())
	swept.Lock()
	past := len(swept.m)
	clear(swept.m)
	swept.Unlock()
	if at != limits.StagingSweptDirs || past != 1 {
		t.Fatalf("%d remembered at the bound, %d one past; want %d and 1", at, past, limits.StagingSweptDirs)
	}
}

// StaleStaging lists only the staging entries whose writer is gone and
// removes nothing; RemoveStale removes one only while it is the entry
// listed and still stale.
func TestStaleStagingPreview(t *testing.T) {
	dir := t.TempDir()
	d := openDir(t, dir)
	live, liveName, err := d.createStaging("live", false)
	must(t, err)
	defer live.Close()
	dead, deadName, err := d.createStaging("dead", false)
	must(t, err)
	must(t, dead.Close())
	must(t, os.WriteFile(filepath.Join(dir, "keep"), []byte("x"), 0o600))
	stale, err := d.StaleStaging(context.Background())
	must(t, err)
	if len(stale) != 1 || stale[0].Name != deadName {
		t.Fatalf("stale %+v (live %s)", stale, liveName)
	}
	for _, name := range []string{deadName, liveName} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("the preview removed %s", name)
		}
	}
	other := stale[0].Stat
	other.Ino++
	if removed, err := d.RemoveStale(deadName, other); err != nil || removed {
		t.Fatalf("removed another entry than the one listed: %v %v", removed, err)
	}
	if removed, err := d.RemoveStale(deadName, stale[0].Stat); err != nil || !removed {
		t.Fatalf("the listed entry: %v %v", removed, err)
	}
	st, _ := d.lstat(liveName, "live")
	if removed, err := d.RemoveStale(liveName, st); err != nil || removed {
		t.Fatalf("a live writer's entry: %v %v", removed, err)
	}
	if _, err := d.RemoveStale("keep", st); err == nil {
		t.Fatal("RemoveStale of a name outside the staging namespace")
	}
}
