package toolkit

import (
	"strings"
	"testing"

	"github.com/capkit/capkit/limits"
)

// BenchmarkPrefixWindow cuts a window of the default bound from a
// thousand items ten times its size (the binary search's encodings).
func BenchmarkPrefixWindow(b *testing.B) {
	list := make([]string, 1000)
	for i := range list {
		list[i] = strings.Repeat("x", 1000)
	}
	call := testCall(limits.DefaultMaxOutputBytes)
	build := func(shown []string, next int) items { return items{Items: shown, Next: next} }
	for b.Loop() {
		if r, err := Prefix(call, list, 0, "item", build); err != nil || r.Next == 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkLinesWindow cuts a window of the default bound from 1 MiB of
// lines.
func BenchmarkLinesWindow(b *testing.B) {
	text := strings.Repeat(strings.Repeat("w", 99)+"\n", limits.MiB/100)
	call := testCall(limits.DefaultMaxOutputBytes)
	build := func(s Span, w string) any { return lined{s, w} }
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if s, _, err := Lines(call, text, 0, "the text", build); err != nil || s.NextOffset == 0 {
			b.Fatal(err)
		}
	}
}
