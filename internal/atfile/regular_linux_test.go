package atfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
	all, err := io.ReadAll(r)
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
