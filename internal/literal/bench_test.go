package literal

import (
	"bytes"
	"testing"

	"github.com/capkit/capkit/internal/testkit"

	"github.com/gofiber/utils/v2/simd"
)

// proseText is 1 MiB of a line of prose with accents and CJK, "needle"
// every 500 lines.
func proseText() []byte {
	line := []byte("The quick brown fox — naïve café, 日本語 — jumps over the lazy dog; (42) [x] {y}.\n")
	src := bytes.Repeat(line, (1<<20)/len(line))
	for i := 0; i+6 < len(src); i += 500 * len(line) {
		copy(src[i:], "needle")
	}
	return src
}

// BenchmarkNext finds every non-overlapping occurrence of literals that
// are absent, rare and common in source and prose with one cursor, beside
// bytes.Index and simd.Memmem (stateless: rarest byte for literals over 6
// bytes, else the pair scan) doing the same.
func BenchmarkNext(b *testing.B) {
	for _, text := range []struct {
		name string
		b    []byte
	}{{"source", testkit.GoSource(1 << 20)}, {"prose", proseText()}} {
		for _, q := range []string{"ErrShortBuffer", "context", "err", "needle", "fox", "Errorf", "café"} {
			lit := []byte(q)
			for _, peer := range []struct {
				name  string
				index func([]byte) int
			}{
				{"cursor", nil},
				{"bytes.Index", func(b []byte) int { return bytes.Index(b, lit) }},
				{"simd.Memmem", func(b []byte) int { return simd.Memmem(b, lit) }},
			} {
				b.Run(text.name+"/"+q+"/"+peer.name, func(b *testing.B) {
					b.SetBytes(int64(len(text.b)))
					for b.Loop() {
						index := peer.index
						if index == nil {
							c := New(lit).Cursor()
							index = c.Next
						}
						for at := 0; ; {
							i := index(text.b[at:])
							if i < 0 {
								break
							}
							at += i + len(lit)
						}
					}
				})
			}
		}
	}
}
