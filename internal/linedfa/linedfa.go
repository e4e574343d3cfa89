// Package linedfa finds the lines of a text that a Go regular expression
// matches, with a lazy DFA built from the expression's regexp/syntax
// program: the question grep asks, each line matched as a text of its
// own (so ^ and $ hold at its ends), answered in one pass over the bytes.
//
// It is written by hand because no module fits: Go's regexp has no DFA
// and matches a large text at tens of MB/s; the DFA-backed modules on the
// module proxy either differ from Go's regexp on invalid UTF-8 (RE2 in
// WebAssembly stops at it, where Go reads each bad byte as U+FFFD) or
// pay a copy per call, or come with a multi-engine planner whose change
// log is a list of wrong results fixed. Here the reference is the
// standard library itself: whatever the DFA cannot decide exactly it
// hands to regexp, line by line.
//
// The automaton runs on bytes: each rune instruction of the program
// becomes a trie of the UTF-8 encodings of its runes, and a DFA state
// also tracks the UTF-8 decoder's state, so a line with an invalid
// sequence is seen as such and matched by regexp (which reads invalid
// bytes as U+FFFD). Empty-width assertions (^ $ \A \z \b \B) are
// resolved between bytes, a state remembering whether it is at a line's
// start and, when the program has \b or \B, whether the byte before was
// a word byte. States are built on demand into a cache bounded by
// limits.GrepDFACacheBytes; a full cache is emptied and built again, and
// a search that would empty it too often (more states than bytes
// searched) goes on with regexp.
package linedfa

import (
	"bytes"
	"context"
	"regexp"
	"regexp/syntax"

	"github.com/capkit/capkit/limits"
)

// Lines is a compiled expression; it is safe for concurrent use, its
// Searchers are not.
type Lines struct {
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

// New builds the line matcher of re, or fails when its program is too
// large for a DFA (the caller then keeps to re).
func New(re *regexp.Regexp) (*Lines, error) {
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
	l := &Lines{re: re, nfa: a}
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
func (l *Lines) buildClasses() {
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
func (l *Lines) NewSearcher() *Searcher {
	s := &Searcher{l: l, budget: limits.GrepDFACacheBytes}
	s.scratch.init(len(l.nfa.nodes))
	s.reset()
	return s
}

// Lines returns the expression the searcher runs.
func (s *Searcher) Lines() *Lines { return s.l }

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

// Next returns the bounds of the first line of data that the expression
// matches (a line ends before a newline or at the end of data), or -1, -1
// when none does; it stops early with ctx's error.
func (s *Searcher) Next(ctx context.Context, data []byte) (start, end int, err error) {
	pos := 0
	for pos < len(data) {
		if s.slow {
			return s.nextByRegexp(ctx, data, pos)
		}
		at, what, err := s.run(ctx, data, pos)
		if err != nil {
			return -1, -1, err
		}
		if what == runNone {
			return -1, -1, nil
		}
		start, end := lineAround(data, pos, at)
		switch what {
		case runMatch:
			return start, end, nil
		case runInvalid:
			if s.l.re.Match(data[start:end]) {
				return start, end, nil
			}
			pos = end + 1
		case runThrash:
			s.slow = true
			pos = start
		}
	}
	return -1, -1, nil
}

// MatchLine reports whether the expression matches line, which holds no
// newline.
func (s *Searcher) MatchLine(ctx context.Context, line []byte) (bool, error) {
	start, _, err := s.Next(ctx, line)
	return start >= 0, err
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

// nextByRegexp is Next line by line with the standard library.
func (s *Searcher) nextByRegexp(ctx context.Context, data []byte, pos int) (start, end int, err error) {
	for n := 1; pos < len(data); n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return -1, -1, err
			}
		}
		end := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			end = pos + i
		}
		if s.l.re.Match(data[pos:end]) {
			return pos, end, nil
		}
		pos = end + 1
	}
	return -1, -1, nil
}
