package local

import (
	"context"
	"io"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
)

// TestWalkOpen: the opener reads the regular files of the directory being
// walked and refuses everything else: symlinks, FIFOs, directories,
// staging names and names that are not one element.
func TestWalkOpen(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "d"), 0o755)
	os.WriteFile(filepath.Join(root, "d", "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(root, "outside"), []byte("secret\n"), 0o644)
	os.Symlink("../outside", filepath.Join(root, "d", "link"))
	if err := syscall.Mkfifo(filepath.Join(root, "d", "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "d", files.TempPrefix+"x"), []byte("staged"), 0o644)
	p := New()
	got := map[string]fault.Code{}
	var content string
	err := p.WalkOpen(context.Background(), root, "d", func(info files.Info, open func(string) (files.File, error)) error {
		if info.Name == "d" {
			if open != nil {
				t.Error("an opener for the walk's start")
			}
			return nil
		}
		for _, base := range []string{path.Base(info.Name), files.TempPrefix + "x", "../outside", "", "."} {
			f, err := open(base)
			key := info.Name + " " + base
			got[key] = fault.CodeOf(err)
			if err == nil {
				if base == "a.txt" {
					b, _ := io.ReadAll(f)
					content = string(b)
					if v, ok := f.Version(); !ok || v != files.VersionOf(b) {
						t.Errorf("version %v %v after reading to the end", v, ok)
					}
				}
				f.Close()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fault.Code{
		"d/a.txt a.txt": "", "d/link link": fault.Denied, "d/fifo fifo": fault.InvalidInput,
		"d/a.txt " + files.TempPrefix + "x": fault.InvalidInput, "d/a.txt ../outside": fault.InvalidInput,
		"d/a.txt ": fault.InvalidInput, "d/a.txt .": fault.InvalidInput,
	}
	for k, code := range want {
		if got[k] != code {
			t.Errorf("%s: code %q, want %q", k, got[k], code)
		}
	}
	if content != "alpha\n" {
		t.Errorf("read %q", content)
	}
}
