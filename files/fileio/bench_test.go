package fileio

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

const benchBytes = 32 << 20

func benchFile(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "src")
	data := make([]byte, benchBytes)
	rand.Read(data)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkDigest measures Digest on a 32 MiB file in the page cache.
// Compare with GODEBUG=cpu.sha=off to see what SHA-NI contributes.
func BenchmarkDigest(b *testing.B) {
	path := benchFile(b)
	b.SetBytes(benchBytes)
	for b.Loop() {
		if _, err := Digest(context.Background(), path, benchBytes, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCopy measures Copy (copy_file_range, fsync, no-replace
// publish) of a 32 MiB file.
func BenchmarkCopy(b *testing.B) {
	path := benchFile(b)
	dir := b.TempDir()
	b.SetBytes(benchBytes)
	i := 0
	for b.Loop() {
		dst := filepath.Join(dir, strconv.Itoa(i))
		if _, err := Copy(context.Background(), path, dst, benchBytes, nil); err != nil {
			b.Fatal(err)
		}
		os.Remove(dst)
		i++
	}
}
