//go:build linux

package passages

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func TestFindFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "src.txt")
	if err := os.WriteFile(p, []byte("a needle, a needle."), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := FindFile(context.Background(), p, "needle", nil)
	if err != nil || r.Total != 2 || r.Matches[1].Before != "a needle, a " {
		t.Fatalf("%+v %v", r, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := FindFile(context.Background(), filepath.Join(dir, "empty.txt"), "x", nil); err != nil || r.Total != 0 {
		t.Fatalf("empty file: %+v %v", r, err)
	}
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, limits.PassagesMaxSourceBytes+1); err != nil {
		t.Fatal(err)
	}
	if _, err := FindFile(context.Background(), big, "x", nil); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one byte past the bound: %v", err)
	}
	if err := os.Symlink(p, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := FindFile(context.Background(), filepath.Join(dir, "link"), "x", nil); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("through a symlink: %v", err)
	}
}

// TestTruncatedMapping searches a mapped file that was cut short after
// it was mapped: reading past its new end faults, and the fault must be
// an integrity failure, not a crash.
func TestTruncatedMapping(t *testing.T) {
	for _, size := range []int{64 << 10, 4 * parallelBytes} {
		truncatedMapping(t, size)
	}
}

func truncatedMapping(t *testing.T, size int) {
	p := filepath.Join(t.TempDir(), "src.txt")
	if err := os.WriteFile(p, bytes.Repeat([]byte("abcdefgh"), size/8), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(src)
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(context.Background(), src, "zz", nil); fault.CodeOf(err) != fault.Integrity {
		t.Fatalf("%v", err)
	}
}
