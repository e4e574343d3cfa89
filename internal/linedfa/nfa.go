package linedfa

import (
	"errors"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// errTooLarge is the failure of a program whose byte automaton would
// pass limits.GrepDFAMaxNFANodes.
var errTooLarge = errors.New("linedfa: program too large")

type nodeKind uint8

const (
	kindConsume nodeKind = iota // edges on bytes
	kindEps                     // Nop, Capture: out
	kindAlt                     // out and arg
	kindEmpty                   // out when the assertions hold
	kindMatch
	kindFail
)

// edge leads to node to on a byte in [lo, hi].
type edge struct {
	lo, hi byte
	to     int32
}

// node is one state of the byte automaton: node i < len(prog.Inst) is
// instruction i, a rune instruction's node the root of a trie of the
// UTF-8 encodings of its runes; the inner nodes of the tries follow.
type node struct {
	kind     nodeKind
	empty    syntax.EmptyOp
	out, arg int32
	edges    []edge
}

// nfa is a byte automaton equivalent to a program on valid UTF-8.
type nfa struct {
	nodes   []node
	start   int32
	hasWord bool  // \b or \B occurs
	inner   int32 // the first inner trie node
	edges   int
}

// buildNFA translates prog, failing when it would pass maxNodes nodes and
// edges together.
func buildNFA(prog *syntax.Prog, maxNodes int) (*nfa, error) {
	if len(prog.Inst) > maxNodes {
		return nil, errTooLarge
	}
	a := &nfa{nodes: make([]node, len(prog.Inst)), start: int32(prog.Start), inner: int32(len(prog.Inst))}
	for pc := range prog.Inst {
		inst := &prog.Inst[pc]
		n := &a.nodes[pc]
		n.out, n.arg = int32(inst.Out), int32(inst.Arg)
		switch inst.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			n.kind = kindAlt
		case syntax.InstCapture, syntax.InstNop:
			n.kind = kindEps
		case syntax.InstEmptyWidth:
			n.kind, n.empty = kindEmpty, syntax.EmptyOp(inst.Arg)
			if n.empty&(syntax.EmptyWordBoundary|syntax.EmptyNoWordBoundary) != 0 {
				a.hasWord = true
			}
		case syntax.InstMatch:
			n.kind = kindMatch
		case syntax.InstFail:
			n.kind = kindFail
		default: // the rune instructions
			n.kind = kindConsume
			for _, r := range instRanges(inst) {
				a.addRange(int32(pc), r[0], r[1], int32(inst.Out))
			}
		}
		if len(a.nodes)+a.edges > maxNodes {
			return nil, errTooLarge
		}
	}
	return a, nil
}

// instRanges returns the runes a rune instruction matches as sorted,
// disjoint ranges, surrogates left out (valid UTF-8 never holds them).
func instRanges(inst *syntax.Inst) [][2]rune {
	var rs [][2]rune
	switch inst.Op {
	case syntax.InstRune1:
		rs = [][2]rune{{inst.Rune[0], inst.Rune[0]}}
	case syntax.InstRuneAny:
		rs = [][2]rune{{0, unicode.MaxRune}}
	case syntax.InstRuneAnyNotNL:
		rs = [][2]rune{{0, '\n' - 1}, {'\n' + 1, unicode.MaxRune}}
	default:
		if len(inst.Rune) == 1 {
			// A single rune, with its case variants when folding (as
			// Inst.MatchRune compares).
			r0 := inst.Rune[0]
			rs = append(rs, [2]rune{r0, r0})
			if syntax.Flags(inst.Arg)&syntax.FoldCase != 0 {
				for r := unicode.SimpleFold(r0); r != r0; r = unicode.SimpleFold(r) {
					rs = append(rs, [2]rune{r, r})
				}
			}
		} else {
			for i := 0; i+1 < len(inst.Rune); i += 2 {
				rs = append(rs, [2]rune{inst.Rune[i], inst.Rune[i+1]})
			}
		}
	}
	return withoutSurrogates(rs)
}

// withoutSurrogates sorts rs and cuts the surrogate block out.
func withoutSurrogates(rs [][2]rune) [][2]rune {
	slices.SortFunc(rs, func(a, b [2]rune) int { return int(a[0] - b[0]) })
	out := rs[:0:0]
	for _, r := range rs {
		lo, hi := r[0], min(r[1], unicode.MaxRune)
		if lo <= 0xD7FF && hi >= 0xE000 {
			out = append(out, [2]rune{lo, 0xD7FF}, [2]rune{0xE000, hi})
			continue
		}
		if lo >= 0xD800 && lo <= 0xDFFF {
			lo = 0xE000
		}
		if hi >= 0xD800 && hi <= 0xDFFF {
			hi = 0xD7FF
		}
		if lo <= hi {
			out = append(out, [2]rune{lo, hi})
		}
	}
	return out
}

// addRange adds to the trie rooted at node root the encodings of the
// runes [lo, hi], each ending at node out.
func (a *nfa) addRange(root int32, lo, hi rune, out int32) {
	utf8Sequences(lo, hi, func(seq []byteRange) {
		cur := root
		for _, br := range seq[:len(seq)-1] {
			cur = a.child(cur, br)
		}
		last := seq[len(seq)-1]
		a.nodes[cur].edges = append(a.nodes[cur].edges, edge{last.lo, last.hi, out})
		a.edges++
	})
}

// child returns the inner trie node reached from cur on br, adding it when
// there is none.
func (a *nfa) child(cur int32, br byteRange) int32 {
	for _, e := range a.nodes[cur].edges {
		if e.lo == br.lo && e.hi == br.hi && e.to >= a.inner {
			return e.to
		}
	}
	id := int32(len(a.nodes))
	a.nodes = append(a.nodes, node{kind: kindConsume})
	a.nodes[cur].edges = append(a.nodes[cur].edges, edge{br.lo, br.hi, id})
	a.edges++
	return id
}

type byteRange struct{ lo, hi byte }

// utf8Sequences calls emit with byte-range sequences whose matches are
// exactly the UTF-8 encodings of the runes in [lo, hi] (no surrogates):
// the range is split until every piece's encodings differ only in
// ranges of whole bytes.
func utf8Sequences(lo, hi rune, emit func([]byteRange)) {
	if lo > hi {
		return
	}
	for _, edge := range [...]rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= edge && edge < hi {
			utf8Sequences(lo, edge, emit)
			utf8Sequences(edge+1, hi, emit)
			return
		}
	}
	if hi < utf8.RuneSelf {
		emit([]byteRange{{byte(lo), byte(hi)}})
		return
	}
	for i := 1; i < utf8.UTFMax; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m == hi&^m {
			continue
		}
		if lo&m != 0 {
			utf8Sequences(lo, lo|m, emit)
			utf8Sequences((lo|m)+1, hi, emit)
			return
		}
		if hi&m != m {
			utf8Sequences(lo, hi&^m-1, emit)
			utf8Sequences(hi&^m, hi, emit)
			return
		}
	}
	var a, b [utf8.UTFMax]byte
	n := utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	seq := make([]byteRange, n)
	for i := range seq {
		seq[i] = byteRange{a[i], b[i]}
	}
	emit(seq)
}
