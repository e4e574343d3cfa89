package linedfa

import (
	"bytes"
	"context"
	"encoding/binary"
	"regexp/syntax"
	"slices"
)

// Transition table entries: a state's row offset, or one of these, which
// have the top bit set (row offsets stay far below it: the cache is
// bounded), so that one test tells them apart. Unsigned, so that a load
// needs no sign extension on the automaton's chain of dependent loads.
const (
	special  uint32 = 1 << 31
	tUnknown        = special | 1 // not built yet
	tMatch          = special | 2 // the line matches
	tDead           = special | 3 // the line cannot match
	tInvalid        = special | 4 // the line is not valid UTF-8
)

// A state's flags: at a line's start, after a word byte (kept only when
// the program has \b or \B), and in bits 4-7 the UTF-8 decoder's state.
const (
	flagStart = 1 << 0
	flagWord  = 1 << 1
)

// dstate is a DFA state: the automaton's nodes alive between two bytes
// (consuming nodes and assertions waiting for the next byte), sorted.
type dstate struct {
	nodes []int32
	flags uint8
}

// Searcher runs a DFA with its own state cache; one
// goroutine at a time.
type Searcher struct {
	l      *DFA
	trans  []uint32 // stride entries per state
	states []dstate
	ids    map[string]uint32 // state key → row offset
	used   int               // cache bytes
	budget int               // limits.GrepDFACacheBytes (smaller in tests)
	// scanned counts the bytes run since the cache was last emptied;
	// built the states built since the context was last checked.
	scanned, built int
	slow           bool // the cache thrashed: regexp from here on
	resets         int  // times the cache was emptied
	// live are the states of the streams being searched, kept when the
	// cache is emptied.
	live      []*uint32
	minStream int // minStreamBytes (smaller in tests)
	// queued are the matching lines of each stream but the first, kept
	// until the streams before it are done.
	queued [streams][][2]int
	scratch
	key []byte
	// repaired is matchInvalid's copy of a line.
	repaired []byte
}

// reset empties the cache, keeping the start state of a line at row 0
// (without ^ or \A in the program, the same state as inside a line with
// no thread alive: a newline then does not change the state).
func (s *Searcher) reset() {
	s.trans, s.states, s.used, s.scanned = s.trans[:0], s.states[:0], 0, 0
	s.ids = make(map[string]uint32)
	s.intern(nil, s.l.startFlags)
}

// stateCost is the cache bytes of a state besides its row and nodes: its
// key's map entry and the dstate.
const stateCost = 96

// intern returns the row of the state (nodes, flags), adding it when it
// fits in the cache; ok is false when it does not.
func (s *Searcher) intern(nodes []int32, flags uint8) (row uint32, ok bool) {
	s.key = append(s.key[:0], flags)
	for _, n := range nodes {
		s.key = binary.LittleEndian.AppendUint32(s.key, uint32(n))
	}
	if row, ok := s.ids[string(s.key)]; ok {
		return row, true
	}
	stride := s.l.stride
	cost := stateCost + 2*len(s.key) + 4*stride
	if s.used+cost > s.budget && len(s.states) > 0 {
		return 0, false
	}
	row = uint32(len(s.trans))
	for range stride {
		s.trans = append(s.trans, tUnknown)
	}
	s.states = append(s.states, dstate{nodes: slices.Clone(nodes), flags: flags})
	s.ids[string(s.key)] = row
	s.used += cost
	return row, true
}

// run runs the automaton over data from byte i in state st and tells
// what it met first, at byte at.
func (s *Searcher) run(ctx context.Context, data []byte, i int, st uint32) (at, what int, err error) {
	cls := &s.l.classes
	for {
		lim := min(len(data), i+checkBytes)
		j, next := scan(s.trans, cls, data[:lim], i, st)
		s.scanned += j - i
		i, st = j, next
		if i == len(data) {
			if i > 0 && data[i-1] == '\n' {
				return 0, runNone, nil
			}
			return s.end(st, i)
		}
		if i == lim {
			if err := ctx.Err(); err != nil {
				return 0, 0, err
			}
			continue
		}
		t := s.trans[int(st)+int(cls[data[i]])]
		if t == tUnknown {
			var ok bool
			if t, ok = s.compute(st, int(cls[data[i]])); !ok {
				return i, runThrash, nil
			}
			if err := s.checkBuilt(ctx); err != nil {
				return 0, 0, err
			}
		}
		switch t {
		case tMatch:
			return i, runMatch, nil
		case tInvalid:
			return i, runInvalid, nil
		case tDead:
			j := bytes.IndexByte(data[i+1:], '\n')
			if j < 0 {
				return 0, runNone, nil
			}
			st, i = 0, i+j+2
		default:
			st, i = t, i+1
		}
	}
}

// scan follows built transitions from state st at data[i] until one is
// not a state or data ends; it returns where it stopped and the state
// there. The one hot loop.
func scan(trans []uint32, cls *[256]uint8, data []byte, i int, st uint32) (int, uint32) {
	for ; i < len(data); i++ {
		// A state mostly stays on the next byte: comparing with it, not
		// following the loaded entry, lets the next load start before
		// this one ends.
		if t := trans[int(st)+int(cls[data[i]])]; t != st {
			if t >= special {
				break
			}
			st = t
		}
	}
	return i, st
}

// end decides the last line, which ends the text without a newline, in
// state st.
func (s *Searcher) end(st uint32, at int) (int, int, error) {
	t := s.trans[int(st)+s.l.eot]
	if t == tUnknown {
		var ok bool
		if t, ok = s.compute(st, s.l.eot); !ok {
			return at, runThrash, nil
		}
	}
	switch t {
	case tMatch:
		return at, runMatch, nil
	case tInvalid:
		return at, runInvalid, nil
	}
	return 0, runNone, nil
}

// checkBuilt checks the context every few states built: building one
// takes time in the size of the program.
func (s *Searcher) checkBuilt(ctx context.Context) error {
	if s.built++; s.built%64 == 0 {
		return ctx.Err()
	}
	return nil
}

// compute builds the transition from the state at row from on class k
// (or the end of the text) and stores it; ok is false when the cache
// thrashes.
func (s *Searcher) compute(from uint32, k int) (t uint32, ok bool) {
	l, a := s.l, s.l.nfa
	st := s.states[int(from)/l.stride]
	u := st.flags >> 4
	end := k == l.eot
	var c byte
	if !end {
		c = l.repr[k]
		end = c == '\n'
	}
	var nu uint8
	if !end {
		if nu, ok = utf8Next(u, c); !ok {
			return s.store(from, k, tInvalid), true
		}
	} else if u != 0 {
		return s.store(from, k, tInvalid), true // a sequence cut short
	}
	nextWord := !end && isWordByte(c)
	flags := emptyFlags(st.flags, end, nextWord)
	in := append(s.in[:0], st.nodes...)
	if u == 0 {
		in = append(in, a.start) // a match may start here
	}
	s.in = in
	var matched bool
	if s.now, matched = s.closure(a, s.now[:0], in, flags, true); matched {
		return s.store(from, k, tMatch), true
	}
	if end {
		return s.store(from, k, 0), true // the next line's start
	}
	s.stepped = step(a, s.stepped[:0], s.now, c)
	if s.after, matched = s.closure(a, s.after[:0], s.stepped, 0, false); matched {
		return s.store(from, k, tMatch), true
	}
	if len(s.after) == 0 && l.startDead && nu == 0 {
		// Dead only between characters: inside a sequence that may yet
		// prove invalid, regexp would read the bytes as U+FFFD.
		return s.store(from, k, tDead), true
	}
	tf := nu << 4
	if a.hasWord && nextWord {
		tf |= flagWord
	}
	row, fits := s.intern(s.after, tf)
	if fits {
		return s.store(from, k, row), true
	}
	if s.scanned < 10*len(s.states) {
		return 0, false
	}
	s.resets++
	s.resetKeeping()
	row, _ = s.intern(s.after, tf)
	return row, true // from's row is gone: nothing to store
}

// resetKeeping empties the cache but for the live streams' states.
func (s *Searcher) resetKeeping() {
	kept := make([]dstate, len(s.live))
	for i, p := range s.live {
		kept[i] = s.states[int(*p)/s.l.stride]
	}
	s.reset()
	for i, p := range s.live {
		*p, _ = s.intern(kept[i].nodes, kept[i].flags)
	}
}

func (s *Searcher) store(from uint32, k int, t uint32) uint32 {
	s.trans[int(from)+k] = t
	return t
}

// emptyFlags returns the assertions that hold between a state's position
// and the next byte (end: the line ends there).
func emptyFlags(stateFlags uint8, end, nextWord bool) syntax.EmptyOp {
	var f syntax.EmptyOp
	if stateFlags&flagStart != 0 {
		f |= syntax.EmptyBeginLine | syntax.EmptyBeginText
	}
	if end {
		f |= syntax.EmptyEndLine | syntax.EmptyEndText
	}
	if (stateFlags&flagWord != 0) != nextWord {
		f |= syntax.EmptyWordBoundary
	} else {
		f |= syntax.EmptyNoWordBoundary
	}
	return f
}

// isWordByte reports whether c is a word character of \b (ASCII only, as
// Go's regexp).
func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// step returns the nodes the consuming nodes of set reach on byte c.
func step(a *nfa, dst, set []int32, c byte) []int32 {
	for _, id := range set {
		for _, e := range a.nodes[id].edges {
			if e.lo <= c && c <= e.hi {
				dst = append(dst, e.to)
			}
		}
	}
	return dst
}

// utf8Next returns the UTF-8 decoder's state after byte c in state u (0:
// between characters; 1-3: that many continuation bytes owed; 4-7: after
// E0, ED, F0, F4, whose next byte has a narrower range), or false if c
// cannot come there.
func utf8Next(u uint8, c byte) (uint8, bool) {
	switch u {
	case 0:
		switch {
		case c < 0x80:
			return 0, true
		case c < 0xC2:
			return 0, false
		case c < 0xE0:
			return 1, true
		case c == 0xE0:
			return 4, true
		case c == 0xED:
			return 5, true
		case c < 0xF0:
			return 2, true
		case c == 0xF0:
			return 6, true
		case c < 0xF4:
			return 3, true
		case c == 0xF4:
			return 7, true
		}
	case 4:
		return 1, 0xA0 <= c && c <= 0xBF
	case 5:
		return 1, 0x80 <= c && c <= 0x9F
	case 6:
		return 2, 0x90 <= c && c <= 0xBF
	case 7:
		return 2, 0x80 <= c && c <= 0x8F
	default:
		return u - 1, 0x80 <= c && c <= 0xBF
	}
	return 0, false
}

// scratch is the working memory of building states, sized once to the
// automaton.
type scratch struct {
	seen                    sparseSet
	stack                   []int32
	in, now, stepped, after []int32
}

func (sc *scratch) init(nodes int) {
	sc.seen = sparseSet{sparse: make([]int32, nodes), dense: make([]int32, 0, nodes)}
}

// closure appends to dst the nodes reached from in through empty moves,
// sorted: consuming nodes, Match, and (known false) assertions waiting
// for the next byte. With known, flags are the assertions that hold and
// the others fail; without, only ^ and \A are decided (they fail: the
// position is inside a line). matched reports a Match reached.
func (sc *scratch) closure(a *nfa, dst, in []int32, flags syntax.EmptyOp, known bool) (out []int32, matched bool) {
	sc.seen.clear()
	sc.stack = append(sc.stack[:0], in...)
	for len(sc.stack) > 0 {
		id := sc.stack[len(sc.stack)-1]
		sc.stack = sc.stack[:len(sc.stack)-1]
		if !sc.seen.add(id) {
			continue
		}
		n := &a.nodes[id]
		switch n.kind {
		case kindConsume:
			dst = append(dst, id)
		case kindMatch:
			matched = true
		case kindEps:
			sc.stack = append(sc.stack, n.out)
		case kindAlt:
			sc.stack = append(sc.stack, n.arg, n.out)
		case kindEmpty:
			switch {
			case known && n.empty&^flags == 0:
				sc.stack = append(sc.stack, n.out)
			case !known && n.empty&(syntax.EmptyBeginLine|syntax.EmptyBeginText) == 0:
				dst = append(dst, id)
			}
		}
	}
	slices.Sort(dst)
	return dst, matched
}

// sparseSet is a set of node ids cleared in constant time.
type sparseSet struct {
	sparse, dense []int32
}

func (s *sparseSet) clear() { s.dense = s.dense[:0] }

// add adds id and reports whether it was new.
func (s *sparseSet) add(id int32) bool {
	i := s.sparse[id]
	if int(i) < len(s.dense) && s.dense[i] == id {
		return false
	}
	s.sparse[id] = int32(len(s.dense))
	s.dense = append(s.dense, id)
	return true
}
