// Package literal finds a literal in a text by its rare bytes: byte-exact
// (Finder), or with its ASCII letters in either case (FoldFinder, fold.go,
// which scans the same way).
//
// A Finder is built once from the literal; a Cursor carries one search
// through one text, call after call. It scans first for the literal's
// rarest byte (bytes.IndexByte, the fastest scan there is) and verifies
// each hit. When false hits come more often than one per KiB scanned, the
// cursor moves for good to a scan for the two rarest bytes at their
// distance (simd.MemchrPair from github.com/gofiber/utils/v2), which a
// false candidate rarely satisfies but which runs slower over a text with
// no candidates. Where pair candidates keep failing too, a call finishes
// with bytes.Index. Rarity is the frequency ranking of
// simd.SelectRareBytes, which tells upper from lower case.
//
// Written here rather than taken whole from simd.Memmem, which picks the
// single or paired scan by the literal's length alone and starts every
// call afresh: the callers search a text in many calls (one per matching
// line, or per match), and which scan wins depends on the text, which
// only the calls before have seen.
//
// Verification stays linear: a cursor spends at most about one compared
// byte per byte scanned, plus a few literal lengths per call, before it
// changes scan.
package literal

import (
	"bytes"

	"github.com/gofiber/utils/v2/simd"
)

// Finder holds a literal and its rare bytes; it is immutable, and safe
// for concurrent use.
type Finder struct {
	lit []byte
	// rare is lit[at], the rarest byte.
	rare byte
	at   int
	// b1 at lit[i1] and b2 at lit[i1+dist] are the two rarest distinct
	// bytes, when the literal has two distinct bytes (then is pair).
	b1, b2   byte
	i1, dist int
	// then is the scan after the single-byte one: pair when the literal
	// has two distinct bytes, else index.
	then scan
	// singleUnit and pairUnit are the bytes each scan passes for each
	// false hit it may verify (see singleMisses and pairMisses).
	singleUnit, pairUnit int
}

// singleMisses is how many bytes the single-byte scan passes for each
// false hit beyond the first before the cursor turns to the pair scan: a
// false hit costs about what the pair scan loses over that many bytes
// where there are none. Never fewer than the literal's length, so the
// bytes verified stay within the bytes scanned.
const singleMisses = 1 << 10

// pairMisses is the same for the pair scan's false candidates beyond the
// first few of each call: where they come more often, bytes.Index, which
// takes over, is faster.
const pairMisses = 16

// New returns a Finder of lit, which it keeps (the caller must not
// change it).
func New(lit []byte) *Finder {
	n := len(lit)
	f := &Finder{lit: lit, then: index, singleUnit: max(n, singleMisses), pairUnit: max(n, pairMisses)}
	if n == 0 {
		return f
	}
	info := simd.SelectRareBytes(lit)
	f.rare, f.at = info.Byte1, info.Index1
	b1, i1, b2, i2 := info.Byte1, info.Index1, info.Byte2, info.Index2
	if b1 == b2 {
		return f
	}
	if i1 > i2 {
		b1, b2, i1, i2 = b2, b1, i2, i1
	}
	f.b1, f.b2, f.i1, f.dist, f.then = b1, b2, i1, i2-i1, pair
	return f
}

// Cursor starts a search through one text (in as many calls of Next as
// the caller likes).
func (f *Finder) Cursor() Cursor { return Cursor{f: *f} }

// Cursor is the state of one search: which scan the text has shown to
// be the better one. It is a value for one goroutine.
type Cursor struct {
	// f is a copy: one load nearer than the Finder, for the many short
	// calls of a text dense with matches.
	f Finder
	// scanned and fails count the bytes the single-byte scan has passed
	// and its false hits.
	scanned, fails int
	scan           scan
}

// scan is the scan a cursor runs.
type scan uint8

const (
	single scan = iota // the rarest byte
	pair               // the two rarest bytes at their distance
	index              // bytes.Index, for a literal of one byte value
)

// Next returns the offset of the first occurrence of the literal in b, or
// -1 (0 for an empty literal, like bytes.Index). The work is linear in
// len(b) and the literal's length. Both scans are in this one function:
// calls come once per match, and a call more shows where matches are
// dense.
func (c *Cursor) Next(b []byte) int {
	f := &c.f
	n := len(f.lit)
	from := 0 // no occurrence starts before
	if c.scan == single {
		if n == 0 {
			return 0
		}
		for at := f.at; c.scan == single; {
			if at >= len(b) {
				return -1
			}
			i := bytes.IndexByte(b[at:], f.rare)
			if i < 0 {
				c.scanned += len(b) - at
				return -1
			}
			c.scanned += i + 1
			s := at + i - f.at
			if s+n > len(b) {
				return -1
			}
			if bytes.Equal(b[s:s+n], f.lit) {
				return s
			}
			if c.fails++; c.fails > 1+c.scanned/f.singleUnit {
				c.scan, from = f.then, s+1
			}
			at += i + 1
		}
	}
	if c.scan == index {
		return indexFrom(b, f.lit, from)
	}
	fails := 0
	for start := from + f.i1; start+n-f.i1 <= len(b); {
		i := simd.MemchrPair(b[start:], f.b1, f.b2, f.dist)
		if i < 0 {
			return -1
		}
		pos := start + i - f.i1
		if pos+n > len(b) {
			return -1
		}
		if bytes.Equal(b[pos:pos+n], f.lit) {
			return pos
		}
		if fails++; fails > 4+(pos-from)/f.pairUnit {
			return indexFrom(b, f.lit, pos+1)
		}
		start += i + 1
	}
	return -1
}

// indexFrom is bytes.Index of lit in b from from on, as an offset in b.
func indexFrom(b, lit []byte, from int) int {
	if from > len(b) {
		return -1
	}
	if i := bytes.Index(b[from:], lit); i >= 0 {
		return from + i
	}
	return -1
}
