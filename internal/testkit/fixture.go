package testkit

import (
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
