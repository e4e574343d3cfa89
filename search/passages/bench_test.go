package passages

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/capkit/capkit/limits"
)

// benchSource is a mostly-ASCII text with some accented and CJK
// characters, limits.PassagesMaxSourceBytes long, in which "needle"
// occurs a few thousand times.
func benchSource(b *testing.B) []byte {
	b.Helper()
	line := []byte("The quick brown fox — naïve café, 日本語 — jumps over the lazy dog; (42) [x] {y}.\n")
	src := bytes.Repeat(line, limits.PassagesMaxSourceBytes/len(line))
	for i := 0; i+6 < len(src); i += 500 * len(line) {
		copy(src[i:], "needle")
	}
	return src
}

func BenchmarkFind(b *testing.B) {
	src := benchSource(b)
	for _, c := range []struct {
		name string
		q    string
		o    *Options
	}{
		{"exact", "needle", nil},
		{"exact_1000", "needle", &Options{Limit: limits.PassagesMaxMatches}},
		{"exact_common", "fox", &Options{Limit: limits.PassagesMaxMatches}},
		{"exact_absent", "zebra", nil},
		{"exact_none", "Zürich", nil},
		{"fold", "NEEDLE", &Options{IgnoreCase: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, err := Find(context.Background(), src, c.q, c.o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFindFile searches the file named by CAPKIT_PASSAGES_BENCH_FILE
// (bench/search.sh builds one) for CAPKIT_PASSAGES_BENCH_QUERY.
func BenchmarkFindFile(b *testing.B) {
	path, q := os.Getenv("CAPKIT_PASSAGES_BENCH_FILE"), os.Getenv("CAPKIT_PASSAGES_BENCH_QUERY")
	if path == "" || q == "" {
		b.Skip("set CAPKIT_PASSAGES_BENCH_FILE and CAPKIT_PASSAGES_BENCH_QUERY")
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	for b.Loop() {
		if _, err := FindFile(context.Background(), path, q, nil); err != nil {
			b.Fatal(err)
		}
	}
}
