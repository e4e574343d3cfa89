package linedfa

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"

	"github.com/capkit/capkit/internal/testkit"
)

// refLines is the reference: the bounds of every line of data that re
// matches, each line matched alone.
func refLines(re *regexp.Regexp, data []byte) [][2]int {
	var out [][2]int
	for pos := 0; pos < len(data); {
		end := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			end = pos + i
		}
		if re.Match(data[pos:end]) {
			out = append(out, [2]int{pos, end})
		}
		pos = end + 1
	}
	return out
}

// dfaLines is every matching line Lines reports.
func dfaLines(t testing.TB, s *Searcher, data []byte) [][2]int {
	var out [][2]int
	err := s.Lines(context.Background(), data, func(start, end int) bool {
		out = append(out, [2]int{start, end})
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkSame checks that Lines finds the lines regexp matches, with a
// full and a tiny state cache, in one stream and in streams.
func checkSame(t testing.TB, expr string, data []byte) {
	t.Helper()
	for _, c := range []struct{ budget, minStream int }{{0, 0}, {1024, 0}, {0, 1}, {1024, 1}} {
		checkSameWith(t, expr, data, c.budget, c.minStream)
	}
}

// checkSameWith is checkSame with a cache of budget bytes and streams of
// at least minStream bytes (0: the defaults).
func checkSameWith(t testing.TB, expr string, data []byte, budget, minStream int) {
	t.Helper()
	re, err := regexp.Compile(expr)
	if err != nil {
		return
	}
	l, err := New(re)
	if errors.Is(err, errTooLarge) {
		return // the caller keeps to regexp
	}
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	s := l.NewSearcher()
	if budget > 0 {
		s.budget = budget
	}
	if minStream > 0 {
		s.minStream = minStream
	}
	want := refLines(re, data)
	got := dfaLines(t, s, data)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pattern %q (cache %d, streams from %d bytes) over %q:\n got %v\nwant %v", expr, budget, minStream, data, got, want)
	}
}

// BenchmarkLines finds the matching lines of 8 MiB of Go-like source
// (checked against regexp first).
func BenchmarkLines(b *testing.B) {
	data := testkit.GoSource(8 << 20)
	for _, expr := range []string{`(?m)[A-Z][a-z]+[0-9]{3}[a-z]`, `(?m)[A-Z][a-z]+[0-9]{4}\b`, `(?mi)CONTEXT`} {
		re := regexp.MustCompile(expr)
		l, err := New(re)
		if err != nil {
			b.Fatal(err)
		}
		s := l.NewSearcher()
		checkSame(b, expr, data)
		b.Run(expr, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				dfaLines(b, s, data)
			}
		})
	}
}
