package testkit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// ReadFile returns the content of the file at the path the elements join
// to (slash-separated elements are fine), failing the test if it cannot be
// read: a fixture under testdata, say.
func ReadFile(t testing.TB, elem ...string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.FromSlash(filepath.Join(elem...)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Allocated runs f after a garbage collection and returns the bytes it
// allocated (runtime.MemStats.TotalAlloc): a generous proxy for the memory
// f needs. Tests using it must not run in parallel with others that
// allocate.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Fixtures returns the contents of the regular files matching the glob
// pattern, in lexical order (directories are skipped), failing the test
// if none match: a fuzz target's seeds from testdata, say, which must not
// silently shrink to nothing.
func Fixtures(t testing.TB, pattern string) [][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.FromSlash(pattern))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, name := range names {
		if st, err := os.Stat(name); err != nil || !st.Mode().IsRegular() {
			continue
		}
		out = append(out, ReadFile(t, name))
	}
	if len(out) == 0 {
		t.Fatalf("no file matches %s", pattern)
	}
	return out
}

// TempDir is t.TempDir with symlinks resolved: t.TempDir may sit under a
// symlinked /tmp, and a root must be the path os.Root and a scope
// report for what lies under it.
func TempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TreeDigest hashes every entry under root: its name, type, permissions
// and size, and a file's content or a link's target. Two equal digests
// say a call changed nothing there.
func TreeDigest(t testing.TB, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v %d\n", p, info.Mode(), info.Size())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "-> %s\n", target)
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
