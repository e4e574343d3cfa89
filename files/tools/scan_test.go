package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
)

// refGrep is the reference: every line of data matched alone, context
// lines as grep -A/-B print them, entries [from, to) kept.
func refGrep(re *regexp.Regexp, data []byte, before, after int) (count int, text string) {
	lines := strings.Split(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	last, afterLeft := 0, 0
	for i, l := range lines {
		n := i + 1
		if re.MatchString(l) {
			count++
			for c := max(last+1, n-before); c < n; c++ {
				b.WriteString(string(appendLine(nil, "f", c, []byte(lines[c-1]), '-')))
			}
			b.WriteString(string(appendLine(nil, "f", n, []byte(l), ':')))
			last, afterLeft = n, after
			continue
		}
		if afterLeft > 0 {
			afterLeft--
			b.WriteString(string(appendLine(nil, "f", n, []byte(l), '-')))
			last = n
		}
	}
	return count, b.String()
}

// TestScannerAgreesWithReference streams random texts through buffers of
// a few bytes (so lines and context cross every chunk boundary) and
// compares counts, line numbers and context with the reference.
func TestScannerAgreesWithReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	patterns := []struct {
		expr string
		fold bool
	}{{"ab", false}, {"(?i)ab", true}, {"^b", false}, {"a.c", false}, {"[xy]+z?", false}, {"(?i)context", true}, {"b$", false}, {`\bx[a-c]\b`, false}, {"[^ab]c$", false}, {"(?i)[a-c]é", true}}
	for iter := range 400 {
		p := patterns[iter%len(patterns)]
		var sb strings.Builder
		for range rng.IntN(40) {
			for range rng.IntN(12) {
				if rng.IntN(10) == 0 {
					sb.WriteString([]string{"é", "\xff", "É"}[rng.IntN(3)])
					continue
				}
				sb.WriteByte("abcABxyz ContEXT"[rng.IntN(16)])
			}
			sb.WriteByte('\n')
		}
		if rng.IntN(2) == 0 {
			sb.WriteString("ab") // no final newline
		}
		data := []byte(sb.String())
		before, after := rng.IntN(3), rng.IntN(3)
		re := regexp.MustCompile("(?m)" + p.expr)
		wantCount, wantText := refGrep(re, data, before, after)
		size := 80 + rng.IntN(48) // half holds the context lines: none dropped
		sc := &scanner{buf: make([]byte, size)}
		o := &scanOpts{m: newMatcher(re, "(?m)"+p.expr, p.fold), before: before, after: after, keepTo: 1 << 30, maxKeepBytes: 1 << 30}
		res := &fileResult{name: "f"}
		if err := sc.search(context.Background(), bytes.NewReader(data), o, res); err != nil {
			t.Fatal(err)
		}
		if res.count != wantCount || string(res.text) != wantText {
			t.Fatalf("pattern %q -B%d -A%d buffer %d over %q:\ngot %d\n%s\nwant %d\n%s", p.expr, before, after, size, data, res.count, res.text, wantCount, wantText)
		}
	}
}

// TestMatcherEngines: a pattern without a literal is matched by the DFA
// over the whole text, unless the bytes it requires are rare enough to
// scan for; a literal alone needs no DFA, a case-folded literal is found
// by its prefilter, and a pattern too large for the DFA keeps to regexp.
func TestMatcherEngines(t *testing.T) {
	for _, c := range []struct {
		expr           string
		fold           bool
		wantDFA, whole bool
	}{
		{`[A-Z][a-z]+[0-9]{3}[a-z]`, false, true, true},
		{`func \w+Handler`, false, true, false},
		{`context`, false, false, false},
		{`(?i)context`, true, false, false},
		{`(?i)con\w+`, true, true, false},
		{`[é-ë]\w{2}`, false, true, false},
		{`(?:\pN|h){1,120}ello`, false, false, false},
	} {
		expr := "(?m)" + c.expr
		m := newMatcher(regexp.MustCompile(expr), expr, c.fold)
		if (m.dfa != nil) != c.wantDFA || m.wholeDFA != c.whole {
			t.Errorf("%q: DFA %v over the whole text %v, want %v %v", c.expr, m.dfa != nil, m.wholeDFA, c.wantDFA, c.whole)
		}
	}
}

// TestScannerKeepsWindow: entries outside [keepFrom, keepTo) are counted
// but not kept, and a byte bound stops keeping (full).
func TestScannerKeepsWindow(t *testing.T) {
	var sb strings.Builder
	for i := range 100 {
		fmt.Fprintf(&sb, "match %d\n", i)
	}
	re := regexp.MustCompile("(?m)match")
	for _, c := range []struct {
		from, to, maxBytes int
		wantKept           int
		wantFull           bool
	}{{0, 10, 1 << 20, 10, false}, {95, 200, 1 << 20, 5, false}, {0, 100, 30, 3, true}} {
		sc := &scanner{buf: make([]byte, 64)}
		o := &scanOpts{m: newMatcher(re, "(?m)match", false), keepFrom: c.from, keepTo: c.to, maxKeepBytes: c.maxBytes}
		res := &fileResult{name: "f"}
		if err := sc.search(context.Background(), strings.NewReader(sb.String()), o, res); err != nil {
			t.Fatal(err)
		}
		if res.count != 100 || len(res.entries) != c.wantKept || res.full != c.wantFull {
			t.Fatalf("%+v: count %d kept %d full %v", c, res.count, len(res.entries), res.full)
		}
		if c.from > 0 && !strings.HasPrefix(string(res.text), fmt.Sprintf("f:%d:match %d\n", c.from+1, c.from)) {
			t.Fatalf("%+v: %q", c, res.text)
		}
	}
}

// TestMatcherInvalidBytes: regexp reads an invalid byte as U+FFFD, so a
// pattern naming U+FFFD matches lines whose bytes are not its encoding;
// the prefilters must not skip them.
func TestMatcherInvalidBytes(t *testing.T) {
	for _, c := range []struct{ expr, text string }{
		{`\x{FFFD}`, "x\xffy\n"},
		{`a\x{FFFD}b`, "a\xffb\n"},
		{`[\x{FFFD}\x{FFFE}]`, "\x80\n"},
	} {
		expr := "(?m)" + c.expr
		re := regexp.MustCompile(expr)
		sc := &scanner{buf: make([]byte, 64)}
		res := &fileResult{name: "f"}
		o := &scanOpts{m: newMatcher(re, expr, false), keepTo: 10, maxKeepBytes: 1 << 20}
		if err := sc.search(context.Background(), strings.NewReader(c.text), o, res); err != nil {
			t.Fatal(err)
		}
		if want := len(re.FindAllIndex([]byte(c.text), -1)); res.count != want {
			t.Errorf("%q on %q: %d matching lines, regexp finds %d", c.expr, c.text, res.count, want)
		}
	}
}

// TestScanCancelled: a search whose context ends fails; it does not
// return the lines counted so far as the file's whole result.
func TestScanCancelled(t *testing.T) {
	expr := "(?m)[A-Z][a-z]+[0-9]{3}[a-z]"
	text := strings.Repeat("no match on this line at all\n", 20000) + "Abc123d\n"
	ctx := &endsAfter{Context: context.Background(), left: 2} // ends inside the search: after the binary probe's read and the first full read
	sc := &scanner{buf: make([]byte, 1<<20)}
	res := &fileResult{name: "f"}
	o := &scanOpts{m: newMatcher(regexp.MustCompile(expr), expr, false), keepTo: 10, maxKeepBytes: 1 << 20}
	if err := sc.search(ctx, strings.NewReader(text), o, res); fault.CodeOf(err) == "" {
		t.Fatalf("a cancelled search returned %v with %d lines", err, res.count)
	}
}

// endsAfter is a context whose Err is nil for its first left calls, then
// context.Canceled.
type endsAfter struct {
	context.Context
	left int
}

func (c *endsAfter) Err() error {
	if c.left > 0 {
		c.left--
		return nil
	}
	return context.Canceled
}

// TestMultilineBeginText: multiline mode restarts its search at the line
// after each match; \A must still match only at the file's start, while
// ^ (always (?m)) and \b match at each line as they do in the whole text.
func TestMultilineBeginText(t *testing.T) {
	for _, c := range []struct {
		pattern, text string
		want          int
	}{
		{`\Ab`, "b\nb\n", 1},
		{`\Ab|c`, "b\nc\nb\n", 2},
		{`(?i)\AB`, "b\nB\n", 1},
		{`^b`, "b\nb\n", 2},
		{`\bb`, "b\nb\n", 2},
		{`\Ab\nb`, "b\nb\nb\nb\n", 1},
	} {
		m, err := compilePattern(GrepArgs{Pattern: c.pattern, Multiline: true})
		if err != nil {
			t.Fatal(err)
		}
		res := &fileResult{name: "f"}
		searchWhole([]byte(c.text), &scanOpts{m: m, mode: modeCount}, res)
		if res.count != c.want {
			t.Errorf("%q on %q: %d matches, want %d", c.pattern, c.text, res.count, c.want)
		}
	}
}

// TestFilesModeStopsReading: in files_with_matches mode a match in the
// first read decides the file: the rest is not read.
func TestFilesModeStopsReading(t *testing.T) {
	text := "match\n" + strings.Repeat("no match on this line at all\n", 4*binaryProbeBytes/29)
	expr := "(?m)match"
	for _, c := range []struct {
		mode     grepMode
		mostRead int
	}{{modeFiles, binaryProbeBytes}, {modeCount, len(text)}} {
		r := &countingReader{r: strings.NewReader(text)}
		sc := &scanner{buf: make([]byte, 1<<20)}
		res := &fileResult{name: "f"}
		o := &scanOpts{m: newMatcher(regexp.MustCompile(expr), expr, false), mode: c.mode, keepTo: 10, maxKeepBytes: 1 << 20}
		if err := sc.search(context.Background(), r, o, res); err != nil {
			t.Fatal(err)
		}
		if res.count == 0 || r.n > c.mostRead || (c.mode == modeCount && res.count != strings.Count(text, "match")) {
			t.Errorf("mode %d: %d matches, read %d bytes of %d (at most %d wanted)", c.mode, res.count, r.n, len(text), c.mostRead)
		}
	}
}

// In files mode a first line longer than the binary probe is searched
// whole, as in every other mode: a match across the probe's end is found
// and no line is reported as searched in pieces.
func TestFilesModeLongFirstLine(t *testing.T) {
	text := strings.Repeat("a", binaryProbeBytes-3) + "NEEDLE" + strings.Repeat("b", 40000) + "\n"
	expr := "NEEDLE|zzz"
	for _, mode := range []grepMode{modeFiles, modeCount} {
		sc := &scanner{buf: make([]byte, 1<<20)}
		res := &fileResult{name: "f"}
		o := &scanOpts{m: newMatcher(regexp.MustCompile(expr), expr, false), mode: mode, keepTo: 10, maxKeepBytes: 1 << 20}
		if err := sc.search(context.Background(), strings.NewReader(text), o, res); err != nil {
			t.Fatal(err)
		}
		if res.count != 1 || res.long != 0 {
			t.Errorf("mode %d: %d matches, %d long lines; want 1 and 0", mode, res.count, res.long)
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += n
	return n, err
}

// FuzzScanLines: for any pattern (as regexp, or literal) and text, the
// scanner's matching lines (prefilters, DFA) are those regexp finds line
// by line, with the same text.
func FuzzScanLines(f *testing.F) {
	for _, s := range []struct {
		pattern, text string
		literal, fold bool
	}{
		{"context", "ctx context.Context\nno\ncontextual\n", true, false},
		{"ErrShortBuffer", "io.ErrShortBuffer\nErrShort\n", true, false},
		{"CONTEXT", "Context\ncontext\nKontext\n", true, true},
		{`func [A-Z]\w*Handler`, "func ServeHandler()\nfunc x()\n", false, false},
		{`[A-Z][a-z]+[0-9]{3}[a-z]`, "Abc123d\nabc\n\xff\n", false, false},
		{`\x{FFFD}x`, "\xffx\n", false, false},
		{"xx", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxy\nxy\n", true, false},
		// case-folded: a symbol compared exactly (0x1F is '?' with the
		// case bit clear), letters of either case
		{"a?_Zx", "A?_zX\na\x1f_zx\nA?\x7fzx\nxXxX\n", true, true},
	} {
		f.Add(s.pattern, s.text, s.literal, s.fold)
	}
	f.Fuzz(func(t *testing.T, pattern, text string, literal, fold bool) {
		if pattern == "" || len(pattern) > 64 || len(text) > 4096 {
			return
		}
		m, err := compilePattern(GrepArgs{Pattern: pattern, Literal: literal, IgnoreCase: fold})
		if err != nil {
			return
		}
		wantCount, wantText := refGrep(m.re, []byte(text), 0, 0)
		sc := &scanner{buf: make([]byte, 1<<16)}
		res := &fileResult{name: "f"}
		o := &scanOpts{m: m, keepTo: 1 << 30, maxKeepBytes: 1 << 30}
		if err := sc.search(context.Background(), strings.NewReader(text), o, res); err != nil {
			t.Fatal(err)
		}
		if res.skipped != "" {
			return // a NUL: binary
		}
		if res.count != wantCount || string(res.text) != wantText {
			t.Fatalf("%q (literal %v, fold %v) on %q: %d lines\n%s\nregexp line by line: %d\n%s", pattern, literal, fold, text, res.count, res.text, wantCount, wantText)
		}
	})
}
