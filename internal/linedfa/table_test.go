package linedfa

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/capkit/capkit/limits"
)

// TestLinesTable: the matching lines of tricky patterns and texts, as
// grep shows them (each line a text of its own).
func TestLinesTable(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	for _, c := range []struct {
		name, expr, text string
		want             []string
	}{
		{"anchor start per line", `(?m)^ab`, "ab\nxab\nab c\n", []string{"ab", "ab c"}},
		{"anchor end per line", `(?m)ab$`, "ab\nabx\ncab", []string{"ab", "cab"}},
		{"\\A and \\z per line", `\Aab\z`, "ab\nab\r\nxab\nab", []string{"ab", "ab"}},
		{"no multiline flag: still per line", `^a`, "a\nba\na", []string{"a", "a"}},
		{"CRLF: $ before the CR fails", `(?m)b$`, "ab\r\nab\n", []string{"ab"}},
		{"CRLF: the CR is text", `b\r$`, "ab\r\nab\n", []string{"ab\r"}},
		{"case-insensitive", `(?i)straße`, "STRASSE\nStraße\nSTRAẞE\nstrasse", []string{"Straße", "STRAẞE"}},
		{"case-insensitive Kelvin", `(?i)k`, "\u212a\nx\nK", []string{"\u212a", "K"}},
		{"dot-all does not cross lines", `(?s)a.b`, "a\nb\naxb", []string{"axb"}},
		{"class with newline does not cross lines", `a[^x]b`, "a\nb\nayb", []string{"ayb"}},
		{"empty pattern matches every line", ``, "a\n\nb", []string{"a", "", "b"}},
		{"empty match", `x*`, "\n\n", []string{"", ""}},
		{"no trailing empty line", `^$`, "a\n", nil},
		{"empty line", `^$`, "a\n\nb", []string{""}},
		{"word boundary", `\bfoo\b`, "foo\nafoo\nfoo_\n(foo)\nfoo", []string{"foo", "(foo)", "foo"}},
		{"word boundary is ASCII", `\bé`, "é\naé\n", []string{"aé"}},
		{"not a word boundary inside a rune", `a\Bb`, "ab\naéb", []string{"ab"}},
		{"\\B never inside a rune", `\B`, "aéb\né", []string{"é"}},
		{"invalid byte is U+FFFD", `a\x{FFFD}b`, "a\xffb\na\xef\xbf\xbdb\nab", []string{"a\xffb", "a\xef\xbf\xbdb"}},
		{"dot matches an invalid byte", `^.$`, "\xff\n\xe2\x82\n€", []string{"\xff", "€"}},
		{"cut sequence", `^..$`, "\xe2\x82\n", []string{"\xe2\x82"}},
		{"surrogate encoding is invalid", `^...$`, "\xed\xa0\x80\n", []string{"\xed\xa0\x80"}},
		{"negated class and invalid bytes", `[^a]`, "a\n\xc0\naa", []string{"\xc0"}},
		{"anchored, invalid lead byte", `^\x{FFFD}`, "\xed\xa0\x80\n\xe2\x82x\nab", []string{"\xed\xa0\x80", "\xe2\x82x"}},
		{"long line, match at its end", `xy$`, long + "y\nxy", []string{long + "y", "xy"}},
		{"long line, anchored, no match", `^y`, long + "\ny", []string{"y"}},
		{"no literal", `[A-Z][a-z]+[0-9]{3}[a-z]`, "Abc123d\nAbc12d\nxxZz999zz", []string{"Abc123d", "xxZz999zz"}},
		{"alternation with an anchored branch", `^a|b`, "xa\nxb\na", []string{"xb", "a"}},
		{"last line without newline", `c`, "a\nbc", []string{"bc"}},
		{"anchored, dead last line", `^(€)?$`, strings.Repeat("a\n", 40) + "Kx", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			re := regexp.MustCompile(c.expr)
			l, err := New(re)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range dfaLines(t, l.NewSearcher(), []byte(c.text)) {
				got = append(got, c.text[b[0]:b[1]])
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
				t.Fatalf("%q over %.60q: got %.60q, want %.60q", c.expr, c.text, got, c.want)
			}
			checkSame(t, c.expr, []byte(c.text)) // and regexp agrees
		})
	}
}

// TestMatchLine: one line, empty included, as regexp matches it.
func TestMatchLine(t *testing.T) {
	for _, c := range []struct {
		expr, line string
		want       bool
	}{{`^$`, "", true}, {`a*`, "", true}, {`a`, "", false}, {`\bx\b`, "x", true}, {`b$`, "ab", true}, {`.`, "\xff", true}, {`^a.c$`, "a\xffc", true}, {`^a.c$`, "a\xff\xffc", false}} {
		re := regexp.MustCompile(c.expr)
		l, err := New(re)
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.NewSearcher().MatchLine(context.Background(), []byte(c.line))
		if err != nil || got != c.want || re.MatchString(c.line) != c.want {
			t.Errorf("%q on %q: %v (%v), want %v", c.expr, c.line, got, err, c.want)
		}
	}
}

// TestUTF8Sequences: the byte sequences of a rune range match exactly
// the encodings of its runes, over every rune.
func TestUTF8Sequences(t *testing.T) {
	for _, r := range [][2]rune{{0, 0x10FFFF}, {0x80, 0x7FF}, {0x7F, 0x800}, {0x123, 0x4567}, {0xE000, 0xFFFF}, {0xFFFD, 0xFFFD}, {0x10000, 0x10FFFF}, {0x3FFFF, 0x40001}, {'a', 'z'}, {0x1F600, 0x1F64F}} {
		var seqs [][]byteRange
		for _, p := range withoutSurrogates([][2]rune{r}) {
			utf8Sequences(p[0], p[1], func(s []byteRange) { seqs = append(seqs, s) })
		}
		var buf [4]byte
		for c := rune(0); c <= 0x10FFFF; c++ {
			if c >= 0xD800 && c <= 0xDFFF {
				continue
			}
			enc := buf[:utf8.EncodeRune(buf[:], c)]
			hits := 0
			for _, s := range seqs {
				if seqMatches(s, enc) {
					hits++
				}
			}
			in := c >= r[0] && c <= r[1]
			if (hits == 1) != in || hits > 1 {
				t.Fatalf("range %U-%U: rune %U matched by %d sequences", r[0], r[1], c, hits)
			}
		}
	}
}

func seqMatches(s []byteRange, b []byte) bool {
	if len(s) != len(b) {
		return false
	}
	for i, r := range s {
		if b[i] < r.lo || b[i] > r.hi {
			return false
		}
	}
	return true
}

// TestThrashingStaysBounded: a pattern whose DFA has 2^16 states keeps
// the cache within its bound, goes on with regexp when it thrashes, and
// finds the same lines.
func TestThrashingStaysBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var b bytes.Buffer
	for b.Len() < 1<<20 {
		for range 200 {
			b.WriteByte("ab"[rng.IntN(2)])
		}
		b.WriteString("c\n")
	}
	data := b.Bytes()
	re := regexp.MustCompile(`(a|b)*a(a|b){15}c`)
	l, err := New(re)
	if err != nil {
		t.Fatal(err)
	}
	s := l.NewSearcher()
	maxUsed := 0
	var got [][2]int
	err = s.Lines(context.Background(), data, func(start, end int) bool {
		maxUsed = max(maxUsed, s.used, 4*cap(s.trans))
		got = append(got, [2]int{start, end})
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if maxUsed > 2*limits.GrepDFACacheBytes {
		t.Fatalf("cache grew to %d bytes", maxUsed)
	}
	if !s.slow {
		t.Fatal("the cache did not thrash: the test does not test the fallback")
	}
	want := refLines(re, data)
	if len(got) != len(want) || (len(got) > 0 && got[len(got)-1] != want[len(want)-1]) {
		t.Fatalf("got %d lines, want %d", len(got), len(want))
	}
}

// countdownCtx is a context whose Err turns Canceled after n calls: a
// cancellation in the middle of a search, without timing.
type countdownCtx struct {
	context.Context
	n int
}

func (c *countdownCtx) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// TestCancellation: a search ends with the context's error, whether the
// automaton is running over built states or building new ones.
func TestCancellation(t *testing.T) {
	plain := bytes.Repeat([]byte("no match on this line at all\n"), 1<<17) // 3.6 MiB
	var ab bytes.Buffer
	rng := rand.New(rand.NewPCG(7, 8))
	for ab.Len() < 1<<20 {
		ab.WriteByte("ab"[rng.IntN(2)])
	}
	for _, c := range []struct {
		name, expr string
		data       []byte
	}{
		{"running", `[A-Z][a-z]+[0-9]{3}[a-z]`, plain},
		{"building states", `(a|b)*a(a|b){12}c`, ab.Bytes()},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := New(regexp.MustCompile(c.expr))
			if err != nil {
				t.Fatal(err)
			}
			ctx := &countdownCtx{Context: context.Background(), n: 2}
			hits := 0
			err = l.NewSearcher().Lines(ctx, c.data, func(int, int) bool { hits++; return true })
			if !errors.Is(err, context.Canceled) || hits != 0 {
				t.Fatalf("%d lines, err %v; want context.Canceled", hits, err)
			}
		})
	}
}

// TestTooLarge: a program past limits.GrepDFAMaxNFANodes is refused (the
// caller keeps to regexp).
func TestTooLarge(t *testing.T) {
	if _, err := New(regexp.MustCompile(`(?:\pL\pN){200}`)); !errors.Is(err, errTooLarge) {
		t.Fatalf("err %v, want errTooLarge", err)
	}
	if _, err := New(regexp.MustCompile(`\pL\pN`)); err != nil {
		t.Fatal(err)
	}
}

// TestStreamsDenseMatches: with matches on most lines, later streams
// fill their queues; lines still come in order, and a hit that returns
// false stops the search there.
func TestStreamsDenseMatches(t *testing.T) {
	var b strings.Builder
	for i := range 6000 {
		if i%7 == 3 {
			b.WriteString("b\n")
		} else {
			b.WriteString("ab\n")
		}
	}
	data := []byte(b.String())
	checkSame(t, `^a`, data)
	l, err := New(regexp.MustCompile(`^a`))
	if err != nil {
		t.Fatal(err)
	}
	for _, stop := range []int{1, 300, 2000, 5000} {
		calls := 0
		err := l.NewSearcher().Lines(context.Background(), data, func(start, end int) bool {
			calls++
			return calls < stop
		})
		if err != nil || calls != stop {
			t.Fatalf("stop at %d: %d calls, err %v", stop, calls, err)
		}
	}
}

// TestCacheResets: a cache too small for the states a text needs, but
// refilled slowly, is emptied and built again (the streams' states kept)
// without falling back to regexp, and the lines are regexp's.
func TestCacheResets(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var b strings.Builder
	for b.Len() < 256<<10 {
		b.WriteString(strings.Repeat("x", 400))
		for range 6 {
			b.WriteByte("ab"[rng.IntN(2)])
		}
		b.WriteString("c\n")
	}
	data := []byte(b.String())
	re := regexp.MustCompile(`(a|b)*a(a|b){5}c`)
	l, err := New(re)
	if err != nil {
		t.Fatal(err)
	}
	for _, minStream := range []int{minStreamBytes, 1 << 30} {
		s := l.NewSearcher()
		s.budget = 6144
		s.minStream = minStream
		got := dfaLines(t, s, data)
		if s.resets == 0 || s.slow {
			t.Fatalf("streams from %d bytes: %d resets, slow %v: the test does not test resets", minStream, s.resets, s.slow)
		}
		if want := refLines(re, data); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("streams from %d bytes: %d lines, want %d", minStream, len(got), len(want))
		}
	}
}

// TestNFABoundEdge: a program whose automaton has exactly the bound's
// nodes and edges is built; with one fewer allowed, it is refused.
func TestNFABoundEdge(t *testing.T) {
	parsed, err := syntax.Parse(`(?i)[a-zé]+\pN{3}\b`, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		t.Fatal(err)
	}
	a, err := buildNFA(prog, limits.GrepDFAMaxNFANodes)
	if err != nil {
		t.Fatal(err)
	}
	size := len(a.nodes) + a.edges
	if _, err := buildNFA(prog, size); err != nil {
		t.Fatalf("at the bound (%d): %v", size, err)
	}
	if _, err := buildNFA(prog, size-1); !errors.Is(err, errTooLarge) {
		t.Fatalf("one past the bound (%d): %v, want errTooLarge", size-1, err)
	}
}

// TestCacheBoundEdge: a state that brings the cache to exactly its bound
// is kept; one byte less of bound and it is refused.
func TestCacheBoundEdge(t *testing.T) {
	l, err := New(regexp.MustCompile(`ab`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spare int
		want  bool
	}{{0, true}, {-1, false}} {
		s := l.NewSearcher()
		nodes := []int32{1, 2}
		cost := stateCost + 2*(1+4*len(nodes)) + 4*l.stride
		s.budget = s.used + cost + c.spare
		if _, ok := s.intern(nodes, 0); ok != c.want {
			t.Errorf("bound %+d bytes past the state: kept %v, want %v", c.spare, ok, c.want)
		}
		if s.used > s.budget {
			t.Errorf("cache at %d bytes, bound %d", s.used, s.budget)
		}
	}
}
