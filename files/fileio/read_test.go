package fileio

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// fixture makes a directory with one of each kind of entry the package
// must accept or refuse.
func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "abc"), []byte("abc"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "empty"), nil, 0o644))
	must(t, os.Symlink("abc", filepath.Join(dir, "link")))
	must(t, os.Symlink("missing", filepath.Join(dir, "dangling")))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(t, os.Symlink("sub", filepath.Join(dir, "sublink")))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "inner"), []byte("inner"), 0o644))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	return dir
}

// refusals are the paths every operation must refuse, with their codes.
func refusals(dir string) []struct {
	name, path string
	code       fault.Code
} {
	return []struct {
		name, path string
		code       fault.Code
	}{
		{"symlink", filepath.Join(dir, "link"), fault.Denied},
		{"dangling symlink", filepath.Join(dir, "dangling"), fault.Denied},
		{"directory", filepath.Join(dir, "sub"), fault.InvalidInput},
		{"fifo", filepath.Join(dir, "fifo"), fault.InvalidInput},
		{"device", "/dev/null", fault.InvalidInput},
		{"missing", filepath.Join(dir, "nope"), fault.NotFound},
		{"relative", "abc", fault.InvalidInput},
		{"root", "/", fault.InvalidInput},
		{"nul", dir + "/a\x00b", fault.InvalidInput},
		{"file as directory", filepath.Join(dir, "abc", "x"), fault.NotFound},
	}
}

func TestReadFile(t *testing.T) {
	dir := fixture(t)
	abc := filepath.Join(dir, "abc")
	cases := []struct {
		name     string
		path     string
		maxBytes int64
		want     string
		code     fault.Code
	}{
		{"whole file", abc, 100, "abc", ""},
		{"size at the bound", abc, 3, "abc", ""},
		{"size one past the bound", abc, 2, "", fault.Limit},
		{"empty file", filepath.Join(dir, "empty"), 1, "", ""},
		{"symlink in the middle is the host's", filepath.Join(dir, "sublink", "inner"), 10, "inner", ""},
		{"bound at the buffered maximum", abc, limits.FileBufferedMaxBytes, "abc", ""},
		{"bound one past the buffered maximum", abc, limits.FileBufferedMaxBytes + 1, "", fault.Limit},
		{"zero bound", abc, 0, "", fault.InvalidInput},
		{"negative bound", abc, -1, "", fault.InvalidInput},
	}
	for _, r := range refusals(dir) {
		cases = append(cases, struct {
			name     string
			path     string
			maxBytes int64
			want     string
			code     fault.Code
		}{r.name, r.path, 10, "", r.code})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := ReadFile(context.Background(), c.path, c.maxBytes)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if err == nil && string(b) != c.want {
				t.Fatalf("got %q", b)
			}
			if err != nil && b != nil {
				t.Fatalf("bytes returned with an error")
			}
		})
	}
}

func TestFIFONeverBlocks(t *testing.T) {
	dir := fixture(t)
	done := make(chan error, 1)
	go func() {
		_, err := ReadFile(context.Background(), filepath.Join(dir, "fifo"), 10)
		done <- err
	}()
	select {
	case err := <-done:
		if fault.CodeOf(err) != fault.InvalidInput {
			t.Fatalf("fifo: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO blocked")
	}
}

func TestDigest(t *testing.T) {
	dir := fixture(t)
	abc := filepath.Join(dir, "abc")
	const abcSum = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	empty := sha256.Sum256(nil)
	cases := []struct {
		name     string
		path     string
		maxBytes int64
		want     string
		code     fault.Code
	}{
		{"known vector", abc, 10, abcSum, ""},
		{"empty file", filepath.Join(dir, "empty"), 1, hex.EncodeToString(empty[:]), ""},
		{"size at the budget", abc, 3, abcSum, ""},
		{"size one past the budget", abc, 2, "", fault.Limit},
		{"largest budget", abc, math.MaxInt64, abcSum, ""},
		{"zero budget", abc, 0, "", fault.InvalidInput},
		{"negative budget", abc, -1, "", fault.InvalidInput},
	}
	for _, r := range refusals(dir) {
		cases = append(cases, struct {
			name     string
			path     string
			maxBytes int64
			want     string
			code     fault.Code
		}{r.name, r.path, 10, "", r.code})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Digest(context.Background(), c.path, c.maxBytes, nil)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if err == nil && s.SHA256 != c.want {
				t.Fatalf("got %s", s.SHA256)
			}
		})
	}
}

// TestDigestLargerThanAChunk covers the chunk loop and progress reports on
// a sparse file (no disk blocks).
func TestDigestLargerThanAChunk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sparse")
	size := int64(2*limits.FileChunkBytes + 5)
	must(t, os.WriteFile(path, nil, 0o600))
	must(t, os.Truncate(path, size))
	var reports []int64
	s, err := Digest(context.Background(), path, size, &Options{Progress: func(done, total int64) {
		if total != size {
			t.Errorf("total %d", total)
		}
		reports = append(reports, done)
	}})
	must(t, err)
	h := sha256.Sum256(make([]byte, size))
	if s.SHA256 != hex.EncodeToString(h[:]) || s.Size != size {
		t.Fatalf("digest %+v", s)
	}
	if len(reports) != 4 || reports[0] != 0 || reports[3] != size {
		t.Fatalf("progress %v", reports)
	}
}

// TestChangedDuringRead changes the file through the progress hook, either
// before the first byte or after the last (before the final metadata
// check): every change must fail with integrity, and a copy leaves nothing.
func TestChangedDuringRead(t *testing.T) {
	changes := []struct {
		name   string
		change func(path string) error
	}{
		{"appended", func(p string) error {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			_, err = f.WriteString("more")
			return errors.Join(err, f.Close())
		}},
		{"truncated", func(p string) error { return os.Truncate(p, 1) }},
		{"rewritten in place, same size, new mtime", func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			_, err = f.WriteAt([]byte("X"), 0)
			err = errors.Join(err, f.Close())
			return errors.Join(err, os.Chtimes(p, time.Time{}, time.Unix(1, 0)))
		}},
		{"mode changed", func(p string) error { return os.Chmod(p, 0o604) }},
	}
	moments := []struct {
		name string
		at   func(done, total int64) bool
	}{
		{"before the first byte", func(done, _ int64) bool { return done == 0 }},
		{"after the last byte", func(done, total int64) bool { return done == total }},
	}
	for _, c := range changes {
		for _, m := range moments {
			hook := func(t *testing.T, path string) *Options {
				changed := false
				return &Options{Progress: func(done, total int64) {
					if !changed && m.at(done, total) {
						changed = true
						must(t, c.change(path))
					}
				}}
			}
			t.Run("digest "+c.name+" "+m.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "f")
				must(t, os.WriteFile(path, []byte("stable content"), 0o600))
				_, err := Digest(context.Background(), path, 100, hook(t, path))
				if fault.CodeOf(err) != fault.Integrity || !errors.Is(err, ErrChanged) {
					t.Fatalf("got %v", err)
				}
			})
			t.Run("copy "+c.name+" "+m.name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "f")
				must(t, os.WriteFile(path, []byte("stable content"), 0o600))
				_, err := Copy(context.Background(), path, filepath.Join(dir, "copy"), 100, hook(t, path))
				if fault.CodeOf(err) != fault.Integrity {
					t.Fatalf("got %v", err)
				}
				assertOnly(t, dir, "f")
			})
		}
	}
}

// TestFileGrewOrShrank reads through File directly: growth is caught by
// the read past the recorded size, shrinkage by an early end.
func TestFileGrewOrShrank(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	must(t, os.WriteFile(path, []byte("0123456789"), 0o600))
	f, err := Open(path)
	must(t, err)
	must(t, os.WriteFile(path, []byte("0123456789+"), 0o600))
	if _, err := readAll(context.Background(), f, 4); fault.CodeOf(err) != fault.Integrity {
		t.Fatalf("grew: %v", err)
	}
	f.Close()

	f, err = Open(path)
	must(t, err)
	must(t, os.Truncate(path, 5))
	if _, err := readAll(context.Background(), f, 4); fault.CodeOf(err) != fault.Integrity {
		t.Fatalf("shrank: %v", err)
	}
	f.Close()

	f, err = Open(path)
	must(t, err)
	defer f.Close()
	if err := f.Verify(); fault.CodeOf(err) != fault.Internal {
		t.Fatalf("verify before the end: %v", err)
	}
}

// TestReplacedAfterOpen: a rename over the path after open unlinks the
// open file (its link count moves), which is a change too: the path no
// longer names what was read.
func TestReplacedAfterOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	must(t, os.WriteFile(path, []byte("old"), 0o600))
	f, err := Open(path)
	must(t, err)
	defer f.Close()
	must(t, os.WriteFile(filepath.Join(dir, "g"), []byte("new!"), 0o600))
	must(t, os.Rename(filepath.Join(dir, "g"), path))
	if b, err := readAll(context.Background(), f, 4); fault.CodeOf(err) != fault.Integrity || b != nil {
		t.Fatalf("%q %v", b, err)
	}
}

func TestCanceled(t *testing.T) {
	dir := fixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Digest(ctx, filepath.Join(dir, "abc"), 10, nil); fault.CodeOf(err) != fault.Unavailable {
		t.Fatalf("digest: %v", err)
	}
	if _, err := ReadFile(ctx, filepath.Join(dir, "abc"), 10); fault.CodeOf(err) != fault.Unavailable {
		t.Fatalf("read: %v", err)
	}
	if _, err := Copy(ctx, filepath.Join(dir, "abc"), filepath.Join(dir, "c"), 10, nil); fault.CodeOf(err) != fault.Unavailable {
		t.Fatalf("copy: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "c")); !os.IsNotExist(err) {
		t.Fatal("canceled copy left a destination")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// assertOnly fails unless dir holds exactly the named entries (no
// temporary files left behind).
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if len(got) != len(names) {
		t.Fatalf("dir holds %v, want %v", got, names)
	}
	for i := range got {
		if got[i] != names[i] {
			t.Fatalf("dir holds %v, want %v", got, names)
		}
	}
}
