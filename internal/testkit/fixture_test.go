package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := ReadFile(t, dir, "a/b.txt"); string(got) != "x" {
		t.Fatalf("got %q", got)
	}
}

func TestAllocated(t *testing.T) {
	var keep []byte
	if got := Allocated(func() { keep = make([]byte, 1<<20) }); got < 1<<20 || got > 2<<20 {
		t.Fatalf("a 1 MiB allocation measured %d bytes", got)
	}
	_ = keep
	if got := Allocated(func() {}); got > 64<<10 {
		t.Fatalf("nothing measured %d bytes", got)
	}
}

func TestFixtures(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"b.xml": "b", "a.xml": "a", "c.txt": "c"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "d.xml"), 0o700); err != nil {
		t.Fatal(err)
	}
	got := Fixtures(t, filepath.Join(dir, "*.xml"))
	if len(got) != 2 || string(got[0]) != "a" || string(got[1]) != "b" {
		t.Fatalf("got %q", got)
	}
}

func TestTempDir(t *testing.T) {
	d := TempDir(t)
	if real, err := filepath.EvalSymlinks(d); err != nil || real != d || !filepath.IsAbs(d) {
		t.Fatalf("%q resolves to %q, %v", d, real, err)
	}
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		t.Fatalf("%v", err)
	}
}

// TestTreeDigest: the digest stays while nothing changes and moves with
// each kind of change it covers.
func TestTreeDigest(t *testing.T) {
	dir := t.TempDir()
	f, link := filepath.Join(dir, "f"), filepath.Join(dir, "l")
	for _, c := range []struct {
		name   string
		change func() error
	}{
		{"a new file", func() error { return os.WriteFile(f, []byte("a"), 0o644) }},
		{"new content", func() error { return os.WriteFile(f, []byte("b"), 0o644) }},
		{"new permissions", func() error { return os.Chmod(f, 0o600) }},
		{"a new link", func() error { return os.Symlink("f", link) }},
		{"a new link target", func() error {
			if err := os.Remove(link); err != nil {
				return err
			}
			return os.Symlink("g", link)
		}},
		{"a new directory", func() error { return os.Mkdir(filepath.Join(dir, "d"), 0o755) }},
	} {
		before := TreeDigest(t, dir)
		if again := TreeDigest(t, dir); again != before {
			t.Fatalf("before %s: the digest moved with nothing changed", c.name)
		}
		if err := c.change(); err != nil {
			t.Fatal(err)
		}
		if TreeDigest(t, dir) == before {
			t.Errorf("%s left the digest as it was", c.name)
		}
	}
}
