package atfile

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/capkit/capkit/fault"
)

// TestOpenListedFDRefusals: the bare-descriptor open refuses exactly what
// OpenListed refuses (they share their checks), and reads what it opens.
func TestOpenListedFDRefusals(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "file"), []byte("hello"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, StagingPrefix+"x"), []byte("staged"), 0o600))
	must(t, os.Symlink("file", filepath.Join(dir, "link")))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	d := openDir(t, dir)
	for _, c := range []struct {
		d    *Dir
		name string
		code fault.Code
		is   error
	}{
		{d, "file", "", nil},
		{d, "link", fault.Denied, ErrSymlink},
		{d, "sub", fault.InvalidInput, ErrNotRegular},
		{d, "fifo", fault.InvalidInput, ErrNotRegular}, // O_NONBLOCK: does not wait for a writer
		{d, "missing", fault.NotFound, nil},
		{d, StagingPrefix + "x", fault.CodeOf(Reserved(StagingPrefix + "x")), nil},
		{d, "a/b", fault.Internal, nil},
		{openDir(t, "/dev"), "null", fault.InvalidInput, ErrNotRegular},
	} {
		r, st, err := c.d.OpenListedFD(c.name, "file")
		f, _, ferr := c.d.OpenListed(c.name, "file")
		if got := fault.CodeOf(err); got != c.code || got != fault.CodeOf(ferr) {
			t.Errorf("%q: code %q (%v), OpenListed %q, want %q", c.name, got, err, fault.CodeOf(ferr), c.code)
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%q: %v is not %v", c.name, err, c.is)
		}
		if ferr == nil {
			f.Close()
		}
		if err != nil {
			continue
		}
		if st.Size != 5 || !st.Mode.IsRegular() {
			t.Errorf("stat %+v", st)
		}
		r.Close()
	}
}

// TestRegularReads: ReadAt reads a window and says io.EOF at the end,
// Read reads on from where it stopped, and a second Close fails.
func TestRegularReads(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("0123456789"), 0o600))
	r, _, err := openDir(t, dir).OpenListedFD("f", "file")
	must(t, err)
	b := make([]byte, 4)
	if n, err := r.ReadAt(b, 3); n != 4 || err != nil || string(b) != "3456" {
		t.Errorf("ReadAt 3: %d %v %q", n, err, b)
	}
	if n, err := r.ReadAt(b, 8); n != 2 || err != io.EOF || string(b[:n]) != "89" {
		t.Errorf("ReadAt 8: %d %v %q", n, err, b[:n])
	}
	if _, err := r.ReadAt(b, -1); err == nil {
		t.Error("ReadAt at a negative offset succeeded")
	}
	all, err := io.ReadAll(&r)
	if err != nil || string(all) != "0123456789" {
		t.Errorf("Read: %q %v", all, err)
	}
	must(t, r.Close())
	if err := r.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}

// TestDirHold: a held directory stays open through the Close of whoever
// opened it, until its holder closes it too.
func TestDirHold(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600))
	d, err := OpenDir(dir)
	must(t, err)
	held := d.Hold()
	must(t, d.Close())
	r, _, err := held.OpenListedFD("f", "file")
	if err != nil {
		t.Fatalf("open in a held directory after its owner's Close: %v", err)
	}
	r.Close()
	must(t, held.Close())
	if _, _, err := held.OpenListedFD("f", "file"); err == nil {
		t.Fatal("open in a directory after its last Close succeeded")
	}
}

// TestWalkSteps: a walk taken a step at a time (ReadEntries, EntryStat
// with typesOnly, Descend) visits what Walk visits, with the types of
// regular files and directories from the listing (Size -1); a directory
// swapped after the listing for another is walked as it now is, and one
// swapped for a symlink fails with integrity.
func TestWalkSteps(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "a/b"), 0o700))
	must(t, os.MkdirAll(filepath.Join(dir, "c/new"), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "a/b/f"), nil, 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "z"), []byte("z"), 0o600))
	must(t, os.Symlink("/", filepath.Join(dir, "a/root")))
	var steps func(d *Dir, prefix string, at func(rel string), got *[]string) error
	steps = func(d *Dir, prefix string, at func(rel string), got *[]string) error {
		entries, err := d.ReadEntries(context.Background(), 100, "directory")
		if err != nil {
			return err
		}
		for _, e := range entries {
			st, ok, err := d.EntryStat(e, true)
			if err != nil || !ok {
				return err
			}
			rel := prefix + e.Name
			*got = append(*got, rel+":"+Kind(st.Mode)+":"+strconv.FormatInt(st.Size, 10))
			if at != nil {
				at(rel)
			}
			if !st.Mode.IsDir() {
				continue
			}
			sub, ok, err := d.Descend(e.Name, st)
			if err != nil {
				return err
			}
			if ok {
				err = steps(sub, rel+"/", at, got)
				sub.Close()
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	walk := func(at func(rel string)) ([]string, error) {
		var got []string
		d := openDir(t, dir)
		defer d.Close()
		return got, steps(d, "", at, &got)
	}
	var full []string
	must(t, Walk(context.Background(), openDir(t, dir), WalkBounds{Names: 100, Depth: 5}, func(rel string, depth int, st Stat, _ *Dir, _ string) (bool, error) {
		full = append(full, rel+":"+Kind(st.Mode))
		return true, nil
	}))
	typed, err := walk(nil)
	must(t, err)
	relKind := func(v []string) []string {
		out := make([]string, len(v))
		for i, s := range v {
			out[i] = s[:strings.LastIndexByte(s, ':')]
		}
		return out
	}
	if !slices.Equal(full, relKind(typed)) {
		t.Fatalf("step by step %v, Walk %v", typed, full)
	}
	for _, want := range []string{"a:a directory:-1", "a/b/f:a regular file:-1", "z:a regular file:-1"} {
		if !slices.Contains(typed, want) {
			t.Errorf("step by step %v has no %q", typed, want)
		}
	}
	got, err := walk(func(rel string) {
		if rel == "a" { // after the listing of the root: c is swapped
			must(t, os.Rename(filepath.Join(dir, "c/new"), filepath.Join(dir, "c2")))
			must(t, os.RemoveAll(filepath.Join(dir, "c")))
			must(t, os.Rename(filepath.Join(dir, "c2"), filepath.Join(dir, "c")))
		}
	})
	if err != nil || !slices.Contains(got, "c:a directory:-1") {
		t.Fatalf("a directory swapped after the listing: %v %v", got, err)
	}
	_, err = walk(func(rel string) {
		if rel == "a" {
			must(t, os.RemoveAll(filepath.Join(dir, "c")))
			must(t, os.Symlink("a", filepath.Join(dir, "c")))
		}
	})
	if !errors.Is(err, ErrChanged) || fault.CodeOf(err) != fault.Integrity {
		t.Fatalf("a directory swapped for a symlink after the listing: %v", err)
	}
}
