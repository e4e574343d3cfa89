package tools

import (
	"bytes"
	"context"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/utils/v2/simd"

	"github.com/capkit/capkit/internal/linedfa"
	"github.com/capkit/capkit/internal/literal"
)

// matcher finds the lines that match a grep pattern. It first looks for
// a literal every match must contain (found by walking the parsed
// pattern) with vectorised scans for its rare bytes (internal/literal,
// case-sensitive or case-folded), and matches only the lines that
// contain it, with a lazy DFA (internal/linedfa); without a literal, the
// DFA runs over the whole text. Go's regexp, which has no DFA and is slow
// over large texts, is the DFA's fallback.
type matcher struct {
	re *regexp.Regexp
	// dfa matches lines in one pass; nil when the pattern is too large
	// for it.
	dfa *linedfa.DFA
	// pre finds candidate positions: every match contains one of its
	// bytes. nil means every line is a candidate (or exact, foldExact or
	// fold finds them).
	pre *byteSet
	// exact finds a literal every match contains (case-sensitive), when
	// set: the candidates, and the multiline files worth searching.
	exact *literal.Finder
	// foldExact finds a case-folded literal every match contains, when
	// the literal is ASCII without k or s; fold finds candidates of any
	// other case-folded literal by one of its bytes.
	foldExact *literal.FoldFinder
	fold      *foldPrefilter
	// wholeDFA is set when the DFA runs over the whole text rather than on
	// the candidate lines of a prefilter.
	wholeDFA bool
	// cont is re for a search that starts after the first line of a text
	// (multiline mode restarts at the line after each match): \A never
	// matches there.
	cont *regexp.Regexp
	// pure is set when a prefilter hit is a match (the pattern is its
	// literal), so the regexp need not run.
	pure bool
}

// newMatcher builds a matcher for a compiled pattern and its source
// (flags included, as it was compiled).
func newMatcher(re *regexp.Regexp, expr string, fold bool) *matcher {
	m := &matcher{re: re}
	m.choosePrefilter(expr, fold)
	if !m.pure {
		m.dfa, _ = linedfa.New(re) // nil: too large for it, regexp matches
	}
	m.wholeDFA = m.dfa != nil && m.exact == nil && m.foldExact == nil && m.fold == nil && (m.pre == nil || !m.pre.rare())
	return m
}

// choosePrefilter sets the prefilter of the pattern expr.
func (m *matcher) choosePrefilter(expr string, fold bool) {
	flags := syntax.Perl
	if fold {
		flags |= syntax.FoldCase
	}
	parsed, err := syntax.Parse(expr, flags)
	if err != nil {
		return
	}
	parsed = parsed.Simplify()
	lit, litFold, whole := requiredLiteral(parsed)
	if i := slices.Index(lit, utf8.RuneError); i >= 0 {
		// regexp reads each invalid byte as U+FFFD, which the rune's own
		// encoding does not cover: only the part before it is required.
		lit, whole = lit[:i], false
	}
	if len(lit) == 0 {
		if set, ok := requiredClass(parsed); ok {
			m.pre = set
		}
		return
	}
	b := []byte(string(lit))
	if !litFold {
		// A line never holds a newline, so a literal with one is only a
		// candidate there (multiline mode skips the line filter).
		m.exact, m.pure = literal.New(b), whole && !bytes.Contains(b, []byte{'\n'})
		return
	}
	p, exact, ok := newFoldPrefilter(b)
	switch {
	case exact:
		// A hit is a match when the pattern is the literal (and has no
		// newline, as above).
		m.foldExact, m.pure = literal.NewFold(b), whole && !bytes.Contains(b, []byte{'\n'})
	case ok:
		m.fold = &p
	}
}

// continuation returns the pattern expr as it must run from a line after
// the first of a text, where \A cannot match: with every \A rewritten to
// match nothing. It is nil when expr has no \A (re serves as it is).
func continuation(expr string) (*regexp.Regexp, error) {
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil || !dropBeginText(parsed) {
		return nil, err
	}
	return regexp.Compile(parsed.String())
}

// dropBeginText rewrites every \A in re to match nothing, and reports
// whether there was one.
func dropBeginText(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginText {
		*re = syntax.Regexp{Op: syntax.OpNoMatch}
		return true
	}
	found := false
	for _, sub := range re.Sub {
		found = dropBeginText(sub) || found
	}
	return found
}

// byteSet is a prefilter on a set of bytes one of which every match
// contains: a table scan, for patterns without a literal.
type byteSet [256]bool

func (s *byteSet) next(b []byte) int {
	for i, c := range b {
		if s[c] {
			return i
		}
	}
	return -1
}

// rare reports whether every byte of the set is rarer than all bytes
// byteRank lists (bytes past ASCII, most control bytes): a scan for them
// then skips most of a text faster than the DFA runs over it.
func (s *byteSet) rare() bool {
	for c, ok := range s {
		if ok && byteRank(byte(c)) > 0 {
			return false
		}
	}
	return true
}

// requiredClass returns the smallest character class (as the bytes its
// members' UTF-8 encodings start with) of which every match of re
// contains a member, if there is one of at most a third of all bytes.
func requiredClass(re *syntax.Regexp) (*byteSet, bool) {
	var best *byteSet
	bestN := 256 / 3
	var walk func(re *syntax.Regexp)
	walk = func(re *syntax.Regexp) {
		switch re.Op {
		case syntax.OpCharClass:
			if set, n := classBytes(re.Rune); n <= bestN {
				best, bestN = set, n
			}
		case syntax.OpCapture, syntax.OpPlus:
			walk(re.Sub[0])
		case syntax.OpRepeat:
			if re.Min >= 1 {
				walk(re.Sub[0])
			}
		case syntax.OpConcat:
			for _, sub := range re.Sub {
				walk(sub)
			}
		}
	}
	walk(re)
	return best, best != nil
}

// classBytes returns the first bytes of the UTF-8 encodings of the runes
// in ranges (pairs of bounds), and how many there are.
func classBytes(ranges []rune) (*byteSet, int) {
	set := new(byteSet)
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		for r := lo; r <= hi && r < utf8.RuneSelf; r++ {
			set[r] = true
		}
		first := 0xC2 // any multi-byte encoding: a superset, still right
		if lo <= utf8.RuneError && utf8.RuneError <= hi {
			first = utf8.RuneSelf // and any invalid byte, which regexp reads as U+FFFD
		}
		if hi >= utf8.RuneSelf {
			for c := first; c < 256; c++ {
				set[c] = true
			}
		}
	}
	n := 0
	for _, ok := range set {
		if ok {
			n++
		}
	}
	return set, n
}

// requiredLiteral returns the longest literal every match of re contains,
// whether it is case-folded, and whether re is exactly that literal.
func requiredLiteral(re *syntax.Regexp) (lit []rune, fold, whole bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return re.Rune, re.Flags&syntax.FoldCase != 0, true
	case syntax.OpCapture:
		return requiredLiteral(re.Sub[0])
	case syntax.OpPlus:
		lit, fold, _ = requiredLiteral(re.Sub[0])
		return lit, fold, false
	case syntax.OpRepeat:
		if re.Min >= 1 {
			lit, fold, _ = requiredLiteral(re.Sub[0])
		}
		return lit, fold, false
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			l, f, _ := requiredLiteral(sub)
			if len(l) > len(lit) || (len(l) == len(lit) && fold && !f) {
				lit, fold = l, f
			}
		}
		return lit, fold, false
	}
	return nil, false, false
}

// foldPrefilter finds the candidates of a case-insensitive literal by
// one of its bytes: the rarest ASCII byte whose case folding stays within
// ASCII (not k or s, which fold to the Kelvin sign and the long s), in
// either case, found in one pass (simd.Memchr2), so every match contains
// it.
type foldPrefilter struct {
	lower, upper byte
}

// newFoldPrefilter returns the prefilter of the case-folded literal lit;
// exact reports that lit is ASCII without k or s, which
// literal.FoldFinder finds whole instead.
func newFoldPrefilter(lit []byte) (p foldPrefilter, exact, ok bool) {
	best, bestRank := -1, 1<<30
	exact = true
	for i, c := range lit {
		if !asciiFoldSafe(c) {
			exact = false
			continue
		}
		if r := byteRank(c); r < bestRank {
			best, bestRank = i, r
		}
	}
	if best < 0 {
		return foldPrefilter{}, false, false
	}
	c := lit[best]
	return foldPrefilter{lower: toLower(c), upper: toUpper(c)}, exact, true
}

// asciiFoldSafe reports whether c is ASCII and all its case variants are.
func asciiFoldSafe(c byte) bool {
	if c >= utf8.RuneSelf {
		return false
	}
	l := toLower(c)
	return l != 'k' && l != 's'
}

func toLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func toUpper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// next returns the position of the first candidate byte in b at or after
// from, or -1.
func (p *foldPrefilter) next(b []byte, from int) int {
	var i int
	if p.upper == p.lower {
		i = bytes.IndexByte(b[from:], p.lower)
	} else {
		i = simd.Memchr2(b[from:], p.lower, p.upper)
	}
	if i < 0 {
		return -1
	}
	return from + i
}

// byteRank orders bytes by how rare they are in source and text (lower
// is rarer; case-folded), so a prefilter stops on few false candidates.
// The order was counted over 60 MB of Go, Markdown, Python, JavaScript,
// JSON and YAML; bytes not listed are rarer than all of them.
func byteRank(c byte) int {
	const common = " tein\t\nros/a1u_c,():2l63pdfh0.4mg85y=9b7*vwx-\"{}'k+%;>z`<[]!&\\|jq@$#^?~"
	if i := strings.IndexByte(common, toLower(c)); i >= 0 {
		return len(common) - i
	}
	return 0
}

// checkEvery is how many candidate lines a search takes between checks
// of its context: a regexp on a long or hostile line is slow, and a
// buffer holds thousands of lines.
const checkEvery = 256

// searcher returns a searcher of the matcher's DFA for one goroutine,
// reusing have when it is one; nil when the matcher has no DFA.
func (m *matcher) searcher(have *linedfa.Searcher) *linedfa.Searcher {
	switch {
	case m.dfa == nil:
		return nil
	case have != nil && have.DFA() == m.dfa:
		return have
	}
	return m.dfa.NewSearcher()
}

// lines calls hit with the bounds of each line of data (no newline) that
// has a match, in order, until hit returns false or ctx ends. dfa is the
// goroutine's searcher of m.dfa (nil without one).
func (m *matcher) lines(ctx context.Context, data []byte, dfa *linedfa.Searcher, hit func(start, end int) bool) {
	if m.wholeDFA && dfa != nil {
		dfa.Lines(ctx, data, hit) // a cancelled search ends early, as below
		return
	}
	pos, n := 0, 0
	var exact literal.Cursor
	if m.exact != nil {
		exact = m.exact.Cursor()
	}
	var foldExact literal.FoldCursor
	if m.foldExact != nil {
		foldExact = m.foldExact.Cursor()
	}
	for pos < len(data) {
		if n++; n%checkEvery == 0 && ctx.Err() != nil {
			return
		}
		at := -1
		switch {
		case m.foldExact != nil:
			if i := foldExact.Next(data[pos:]); i >= 0 {
				at = pos + i
			}
		case m.fold != nil:
			at = m.fold.next(data, pos)
		case m.exact != nil:
			if i := exact.Next(data[pos:]); i >= 0 {
				at = pos + i
			}
		case m.pre != nil:
			if i := m.pre.next(data[pos:]); i >= 0 {
				at = pos + i
			}
		default:
			at = m.nextLine(ctx, data, pos)
		}
		if at < 0 {
			return
		}
		start := pos + bytes.LastIndexByte(data[pos:at], '\n') + 1
		end := len(data)
		if i := bytes.IndexByte(data[at:], '\n'); i >= 0 {
			end = at + i
		}
		if m.pure || m.matchLine(ctx, dfa, data[start:end]) {
			if !hit(start, end) {
				return
			}
		}
		pos = end + 1
	}
}

// matchLine reports whether a candidate line matches.
func (m *matcher) matchLine(ctx context.Context, dfa *linedfa.Searcher, line []byte) bool {
	if dfa == nil {
		return m.re.Match(line)
	}
	ok, _ := dfa.MatchLine(ctx, line)
	return ok
}

// nextLine returns the start of the first line from pos on that the
// regexp matches, or -1. Line by line: on short inputs Go's regexp uses
// its backtracker, several times faster than the NFA it runs over a
// large text.
func (m *matcher) nextLine(ctx context.Context, data []byte, pos int) int {
	for n := 1; pos < len(data); n++ {
		if n%checkEvery == 0 && ctx.Err() != nil {
			return -1
		}
		end := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			end = pos + i
		}
		if m.re.Match(data[pos:end]) {
			return pos
		}
		pos = end + 1
	}
	return -1
}
