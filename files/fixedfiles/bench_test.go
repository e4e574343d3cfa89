package fixedfiles

import (
	"bytes"
	"os"
	"testing"

	"github.com/capkit/capkit/limits"
	"golang.org/x/sys/unix"
)

// benchFile writes a 64 KiB text file (the default per-file bound).
func benchFile(b *testing.B) string {
	b.Helper()
	p := b.TempDir() + "/entry.txt"
	if err := os.WriteFile(p, bytes.Repeat([]byte("catalog line of text\n"), limits.CatalogDefaultFileBytes/21+1)[:limits.CatalogDefaultFileBytes], 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkCatalogRead64K is Catalog.Read of a 64 KiB entry: fstat,
// positioned reads to EOF, UTF-8 validation, a fresh buffer.
func BenchmarkCatalogRead64K(b *testing.B) {
	p := benchFile(b)
	bl, _ := NewBuilder(nil)
	if err := bl.InsertPath("entry", p); err != nil {
		b.Fatal(err)
	}
	cat, _ := bl.Build()
	defer cat.Close()
	b.SetBytes(limits.CatalogDefaultFileBytes)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cat.Read("entry"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPread64K is the baseline: one pread(2) of the same 64 KiB into
// a fresh buffer (the catalog returns a buffer the caller owns).
func BenchmarkPread64K(b *testing.B) {
	f, err := os.Open(benchFile(b))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	b.SetBytes(limits.CatalogDefaultFileBytes)
	b.ReportAllocs()
	for b.Loop() {
		sink = pread(b, fd)
	}
}

// sink keeps the baseline's buffer on the heap, as the catalog's is.
var sink []byte

//go:noinline
func pread(b *testing.B, fd int) []byte {
	buf := make([]byte, limits.CatalogDefaultFileBytes)
	if n, err := unix.Pread(fd, buf, 0); err != nil || n != len(buf) {
		b.Fatal(n, err)
	}
	return buf
}
