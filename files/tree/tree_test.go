package tree

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fixture builds:
//
//	a/            dir
//	a/b.txt       "bb"
//	a/deep/c.txt  "ccc"
//	empty/        dir
//	f.txt         "f"
//	fifo          FIFO (excluded)
//	sock          socket (excluded)
//	link          -> f.txt (excluded)
//	out           -> outside directory (excluded, not followed)
func fixture(t *testing.T) (dir, outside string) {
	t.Helper()
	dir, outside = t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600))
	must(t, os.MkdirAll(filepath.Join(dir, "a", "deep"), 0o755))
	must(t, os.Mkdir(filepath.Join(dir, "empty"), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "a", "b.txt"), []byte("bb"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "a", "deep", "c.txt"), []byte("ccc"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "f.txt"), []byte("f"), 0o600))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	must(t, err)
	t.Cleanup(func() { l.Close() })
	must(t, os.Symlink("f.txt", filepath.Join(dir, "link")))
	must(t, os.Symlink(outside, filepath.Join(dir, "out")))
	return dir, outside
}

func TestList(t *testing.T) {
	dir, _ := fixture(t)
	l, err := List(context.Background(), dir, nil)
	must(t, err)
	var paths []string
	for _, e := range l.Entries {
		paths = append(paths, e.Path+":"+string(e.Type))
	}
	want := "a:dir a/b.txt:file a/deep:dir a/deep/c.txt:file empty:dir f.txt:file"
	if got := strings.Join(paths, " "); got != want {
		t.Fatalf("entries %s\nwant    %s", got, want)
	}
	if l.Files != 3 || l.Dirs != 3 || l.Bytes != 6 || l.ExcludedSymlinks != 2 || l.ExcludedSpecial != 2 {
		t.Fatalf("counts %+v", l)
	}
	if e := l.Entries[5]; e.Size != 1 || e.Mode != 0o600 || e.Inode == 0 || e.ModTime.IsZero() {
		t.Fatalf("f.txt entry %+v", e)
	}
	if text := l.Text(); !strings.Contains(text, "d 0755 ") || !strings.Contains(text, " a/deep/\n") ||
		!strings.Contains(text, "3 files, 3 directories, 6 bytes; left out: 2 symlinks, 2 special files") {
		t.Fatalf("text:\n%s", text)
	}
}

func TestListRefusals(t *testing.T) {
	dir, _ := fixture(t)
	cases := []struct {
		name, path string
		opts       *Options
		code       fault.Code
	}{
		{"symlink to a directory", filepath.Join(dir, "out"), nil, fault.Denied},
		{"regular file", filepath.Join(dir, "f.txt"), nil, fault.InvalidInput},
		{"fifo", filepath.Join(dir, "fifo"), nil, fault.InvalidInput},
		{"missing", filepath.Join(dir, "nope"), nil, fault.NotFound},
		{"relative", "a", nil, fault.InvalidInput},
		{"empty directory", filepath.Join(dir, "empty"), nil, ""},
		{"negative entries", dir, &Options{MaxEntries: -1}, fault.InvalidInput},
		{"entries at the hard limit", filepath.Join(dir, "empty"), &Options{MaxEntries: limits.TreeHardEntries}, ""},
		{"entries past the hard limit", dir, &Options{MaxEntries: limits.TreeHardEntries + 1}, fault.InvalidInput},
		{"depth at the hard limit", filepath.Join(dir, "empty"), &Options{MaxDepth: limits.TreeHardDepth}, ""},
		{"depth past the hard limit", dir, &Options{MaxDepth: limits.TreeHardDepth + 1}, fault.InvalidInput},
		{"negative bytes", dir, &Options{MaxBytes: -1}, fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := List(context.Background(), c.path, c.opts)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
		})
	}
}

// TestListSmallBounds checks each bound at its edge and one past it on the
// fixture (9 names, 6 bytes, depth 3).
func TestListSmallBounds(t *testing.T) {
	dir, _ := fixture(t)
	cases := []struct {
		name string
		opts Options
		code fault.Code
	}{
		{"entries at the edge", Options{MaxEntries: 10}, ""},
		{"entries one short", Options{MaxEntries: 9}, fault.Limit},
		{"bytes at the edge", Options{MaxBytes: 6}, ""},
		{"bytes one short", Options{MaxBytes: 5}, fault.Limit},
		{"depth at the edge", Options{MaxDepth: 3}, ""},
		{"depth one short", Options{MaxDepth: 2}, fault.Limit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := List(context.Background(), dir, &c.opts)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if err != nil && l != nil {
				t.Fatal("a listing returned with a limit failure")
			}
		})
	}
}

// TestDefaultLimits checks the default bounds at the edge and one past.
func TestDefaultLimits(t *testing.T) {
	t.Run("entries", func(t *testing.T) {
		dir := t.TempDir()
		// Hard links to one empty file: ten times faster to make than files.
		must(t, os.WriteFile(filepath.Join(dir, "0"), nil, 0o600))
		for i := 1; i < limits.TreeDefaultEntries; i++ {
			must(t, os.Link(filepath.Join(dir, "0"), filepath.Join(dir, strconv.Itoa(i))))
		}
		l, err := List(context.Background(), dir, nil)
		must(t, err)
		if len(l.Entries) != limits.TreeDefaultEntries {
			t.Fatalf("%d entries", len(l.Entries))
		}
		// One more name, even one the walk would leave out, is over.
		must(t, os.Symlink("0", filepath.Join(dir, "link")))
		if _, err := List(context.Background(), dir, nil); fault.CodeOf(err) != fault.Limit {
			t.Fatalf("one past: %v", err)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		dir := t.TempDir()
		big := filepath.Join(dir, "sparse")
		must(t, os.WriteFile(big, nil, 0o600))
		must(t, os.Truncate(big, limits.TreeDefaultBytes)) // sparse: no disk blocks
		if _, err := List(context.Background(), dir, nil); err != nil {
			t.Fatalf("at the limit: %v", err)
		}
		must(t, os.WriteFile(filepath.Join(dir, "one"), []byte("1"), 0o600))
		if _, err := List(context.Background(), dir, nil); fault.CodeOf(err) != fault.Limit {
			t.Fatalf("one past: %v", err)
		}
	})
	t.Run("depth", func(t *testing.T) {
		dir := t.TempDir()
		p := dir
		for range limits.TreeDefaultDepth {
			p = filepath.Join(p, "d")
		}
		must(t, os.MkdirAll(p, 0o700))
		l, err := List(context.Background(), dir, nil)
		must(t, err)
		if len(l.Entries) != limits.TreeDefaultDepth {
			t.Fatalf("%d entries", len(l.Entries))
		}
		must(t, os.WriteFile(filepath.Join(p, "f"), nil, 0o600))
		if _, err := List(context.Background(), dir, nil); fault.CodeOf(err) != fault.Limit {
			t.Fatalf("one past: %v", err)
		}
	})
}

func TestStampOf(t *testing.T) {
	dir, _ := fixture(t)
	cases := []struct {
		name string
		path string
		typ  Type
		code fault.Code
	}{
		{"file", filepath.Join(dir, "f.txt"), File, ""},
		{"directory", filepath.Join(dir, "a"), Dir, ""},
		{"symlink is stamped, not followed", filepath.Join(dir, "link"), Symlink, ""},
		{"fifo", filepath.Join(dir, "fifo"), FIFO, ""},
		{"socket", filepath.Join(dir, "sock"), Socket, ""},
		{"device", "/dev/null", Device, ""},
		{"filesystem root", "/", Dir, ""},
		{"missing", filepath.Join(dir, "nope"), "", fault.NotFound},
		{"relative", "f.txt", "", fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := StampOf(c.path)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if err == nil && (s.Type != c.typ || s.Inode == 0) {
				t.Fatalf("stamp %+v", s)
			}
		})
	}
	s1, err := StampOf(filepath.Join(dir, "link"))
	must(t, err)
	if s1.Size != int64(len("f.txt")) {
		t.Fatalf("symlink size %d is not its target's length", s1.Size)
	}
	f := filepath.Join(dir, "f.txt")
	a, err := StampOf(f)
	must(t, err)
	b, err := StampOf(f)
	must(t, err)
	if !a.Equal(b) {
		t.Fatal("two stamps of an unchanged file differ")
	}
	must(t, os.Chtimes(f, time.Time{}, time.Unix(1, 0)))
	c, err := StampOf(f)
	must(t, err)
	if a.Equal(c) {
		t.Fatal("stamps equal after the mtime changed")
	}
}

// TestListDirectorySwappedForSymlink: replacing a directory with a symlink
// between its lstat and its open is caught (the walk never follows it).
func TestListDirectorySwappedForSymlink(t *testing.T) {
	dir, outside := fixture(t)
	h, err := scope.Host(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	d, _, err := h.OpenTree("directory")
	must(t, err)
	defer d.Close()
	o, _ := (*Options)(nil).resolved()
	swapped := false
	err = scope.Walk(context.Background(), d, scope.WalkBounds{Names: o.MaxEntries, Depth: o.MaxDepth}, func(rel string, _ int, st scope.Stat, _ *scope.Dir, _ string) (bool, error) {
		if rel == "a" && !swapped {
			swapped = true
			must(t, os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "a.old")))
			must(t, os.Symlink(outside, filepath.Join(dir, "a")))
		}
		if strings.Contains(rel, "secret") {
			t.Fatalf("walk left the tree: %s", rel)
		}
		return true, nil
	})
	if fault.CodeOf(err) != fault.Integrity || !errors.Is(err, scope.ErrChanged) {
		t.Fatalf("got %v", err)
	}
}
