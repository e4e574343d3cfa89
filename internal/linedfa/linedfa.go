// Package linedfa finds the lines of a text that a Go regular expression
// matches, with a lazy DFA built from the expression's regexp/syntax
// program: the question grep asks, each line matched as a text of its
// own (so ^ and $ hold at its ends), answered in one pass over the bytes.
//
// It is written by hand because no module on the module proxy fits. Go's
// regexp has no DFA and matches a large text at about 100 MB/s.
// github.com/wasilibs/go-re2 (RE2 compiled to Go through WebAssembly)
// stops at invalid UTF-8, where Go's regexp reads each bad byte as
// U+FFFD, so its lines would differ, and it copies the text into its
// memory on every call (1.5 MB/s over a buffer with many matching
// lines). github.com/coregx/coregex (v0.12.15, pure Go, lazy DFA among
// other engines) ran grep's pattern without a literal at 190 MB/s and
// one with  at 78 MB/s here, and its recent releases fix wrong
// results (leftmost semantics, \B at the end of input).
// github.com/grafana/regexp is the standard library's engines tuned, no
// DFA. Here the reference is the standard library itself: whatever the
// DFA cannot decide exactly it hands to regexp, line by line.
//
// The automaton runs on bytes: each rune instruction of the program
// becomes a trie of the UTF-8 encodings of its runes, and a DFA state
// also tracks the UTF-8 decoder's state, so a line with an invalid
// sequence is seen as such, and matched again as regexp reads it (each
// invalid byte as U+FFFD): as a copy with U+FFFD's encoding in place of
// each such byte. Empty-width assertions (^ $ \A \z \b \B) are
// resolved between bytes, a state remembering whether it is at a line's
// start and, when the program has \b or \B, whether the byte before was
// a word byte; a match may start only between characters. States are
// built on demand into a cache bounded by limits.GrepDFACacheBytes; a
// full cache is emptied and built again, and a search that would empty
// it too often (fewer than ten bytes searched per state built) goes on
// with regexp. A program past limits.GrepDFAMaxNFANodes is refused.
package linedfa

import (
	"bytes"
	"context"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"

	"github.com/capkit/capkit/limits"
)

// DFA is a compiled expression; it is safe for concurrent use, its
// Searchers are not.
type DFA struct {
	re      *regexp.Regexp
	nfa     *nfa
	classes [256]uint8 // byte → class; classes get their own column
	repr    []byte     // a byte of each class
	stride  int        // columns: the classes and end of text
	eot     int        // the column of the end of the text
	// startDead is set when no match can start inside a line (every
	// path from the start passes ^ or \A): a line whose threads died
	// cannot match.
	startDead bool
	// startFlags are the flags of a line's start state: flagStart when
	// the program has ^ or \A, else none.
	startFlags uint8
}

// New builds the line matcher of re (compiled by regexp.Compile), or
// fails when its program is too large for a DFA (the caller then keeps
// to re).
func New(re *regexp.Regexp) (*DFA, error) {
	parsed, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, err
	}
	a, err := buildNFA(prog, limits.GrepDFAMaxNFANodes)
	if err != nil {
		return nil, err
	}
	l := &DFA{re: re, nfa: a}
	l.buildClasses()
	var sc scratch
	sc.init(len(a.nodes))
	inside, matched := sc.closure(a, nil, []int32{a.start}, 0, false)
	l.startDead = len(inside) == 0 && !matched
	for _, n := range a.nodes {
		if n.kind == kindEmpty && n.empty&(syntax.EmptyBeginLine|syntax.EmptyBeginText) != 0 {
			l.startFlags = flagStart
		}
	}
	return l, nil
}

// buildClasses splits the bytes into classes on which every transition
// agrees: the automaton's edges, the newline, the UTF-8 decoder's byte
// ranges and, with \b, the word bytes.
func (l *DFA) buildClasses() {
	var cut [257]bool // cut[b]: a class starts at b
	mark := func(lo, hi int) { cut[lo], cut[hi+1] = true, true }
	for _, n := range l.nfa.nodes {
		for _, e := range n.edges {
			mark(int(e.lo), int(e.hi))
		}
	}
	mark('\n', '\n')
	for _, b := range [...]int{0x80, 0x90, 0xA0, 0xC0, 0xC2, 0xE0, 0xE1, 0xED, 0xEE, 0xF0, 0xF1, 0xF4, 0xF5} {
		cut[b] = true
	}
	if l.nfa.hasWord {
		mark('0', '9')
		mark('A', 'Z')
		mark('_', '_')
		mark('a', 'z')
	}
	class := -1
	for b := range 256 {
		if b == 0 || cut[b] {
			class++
			l.repr = append(l.repr, byte(b))
		}
		l.classes[b] = uint8(class)
	}
	l.eot = class + 1
	l.stride = class + 2
}

// NewSearcher returns a searcher with an empty state cache.
func (l *DFA) NewSearcher() *Searcher {
	s := &Searcher{l: l, budget: limits.GrepDFACacheBytes, minStream: minStreamBytes}
	s.scratch.init(len(l.nfa.nodes))
	s.reset()
	return s
}

// DFA returns the automaton the searcher runs.
func (s *Searcher) DFA() *DFA { return s.l }

// Search results of a run of the automaton.
const (
	runNone    = iota // no line of the text matches
	runMatch          // the line holding byte at matches
	runInvalid        // the line holding byte at is not valid UTF-8
	runThrash         // the cache thrashes: go on with regexp from at's line
)

// checkBytes is how many bytes the automaton runs between checks of the
// context.
const checkBytes = 64 * limits.KiB

// Lines calls hit with the bounds of each line of data that the
// expression matches (a line ends before a newline or at the end of
// data), in order, until hit returns false; it stops early with ctx's
// error.
func (s *Searcher) Lines(ctx context.Context, data []byte, hit func(start, end int) bool) error {
	if !s.slow && len(data) >= streams*s.minStream {
		return s.linesByStreams(ctx, data, hit)
	}
	x := newStream(data, 0, len(data))
	_, err := s.finish(ctx, data, &x, hit)
	return err
}

// MatchLine reports whether the expression matches line, which holds no
// newline.
func (s *Searcher) MatchLine(ctx context.Context, line []byte) (bool, error) {
	if s.slow {
		return s.l.re.Match(line), nil
	}
	_, what, err := s.run(ctx, line, 0, 0)
	switch what {
	case runInvalid:
		return s.matchInvalid(ctx, line), err
	case runThrash:
		s.slow = true
		return s.l.re.Match(line), err
	}
	return what == runMatch, err
}

// matchInvalid decides a line that is not valid UTF-8 as regexp does,
// which reads each byte of an invalid sequence as U+FFFD: by running the
// automaton over a copy with each such byte replaced by U+FFFD's
// encoding, valid UTF-8 of the same runes. The copy is at most three
// times the line; regexp decides when the cache thrashes.
func (s *Searcher) matchInvalid(ctx context.Context, line []byte) bool {
	b := s.repaired[:0]
	for i := 0; i < len(line); {
		if line[i] < utf8.RuneSelf {
			b = append(b, line[i])
			i++
			continue
		}
		r, n := utf8.DecodeRune(line[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, line[i:i+n]...)
		}
		i += n
	}
	s.repaired = b
	_, what, err := s.run(ctx, b, 0, 0)
	switch {
	case err != nil:
		return false // the caller sees ctx's error
	case what == runThrash:
		s.slow = true
		return s.l.re.Match(line)
	}
	return what == runMatch
}

// stream is a run of whole lines data[start:end] being searched, at byte
// i in state st; tail is set while the last line, which ends the text
// without a newline, is not decided (at its end, the automaton still
// takes the end of the text).
type stream struct {
	start, i, end int
	st            uint32
	tail          bool
}

// past moves x to the line after the one ending at end.
func (x *stream) past(end int) {
	x.i, x.st = min(end+1, x.end), 0
	if end >= x.end {
		x.tail = false
	}
}

func newStream(data []byte, start, end int) stream {
	return stream{start: start, i: start, end: end, tail: end == len(data) && end > start && data[end-1] != '\n'}
}

// finish searches the rest of stream x, calling hit for each matching
// line; stopped reports that hit returned false.
func (s *Searcher) finish(ctx context.Context, data []byte, x *stream, hit func(start, end int) bool) (stopped bool, err error) {
	for x.i < x.end || x.tail {
		if s.slow {
			from := x.start + bytes.LastIndexByte(data[x.start:x.i], '\n') + 1
			x.i, x.tail = x.end, false
			return s.linesByRegexp(ctx, data[:x.end], from, hit)
		}
		at, what, err := s.run(ctx, data[:x.end], x.i, x.st)
		if err != nil || what == runNone {
			x.i, x.tail = x.end, false
			return false, err
		}
		if what == runThrash {
			s.slow, x.i = true, at
			continue
		}
		start, end := lineAround(data, x.start, at)
		x.past(end)
		if what == runInvalid && !s.matchInvalid(ctx, data[start:end]) {
			continue
		}
		if !hit(start, end) {
			return true, nil
		}
	}
	return false, nil
}

// lineAround returns the line of data holding byte at (at == len(data):
// the last line), not looking before pos, which starts a line.
func lineAround(data []byte, pos, at int) (start, end int) {
	at = min(at, len(data))
	start = pos + bytes.LastIndexByte(data[pos:at], '\n') + 1
	end = len(data)
	if i := bytes.IndexByte(data[at:], '\n'); i >= 0 {
		end = at + i
	}
	return start, end
}

// linesByRegexp is Lines from pos (a line's start) with the standard
// library, line by line.
func (s *Searcher) linesByRegexp(ctx context.Context, data []byte, pos int, hit func(start, end int) bool) (stopped bool, err error) {
	for n := 1; pos < len(data); n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		end := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			end = pos + i
		}
		if s.l.re.Match(data[pos:end]) && !hit(pos, end) {
			return true, nil
		}
		pos = end + 1
	}
	return false, nil
}
