package literal

import (
	"bytes"

	"github.com/gofiber/utils/v2/simd"
)

// FoldFinder finds an ASCII literal with its ASCII letters matched in
// either case, as a case-insensitive regular expression matches them; the
// caller keeps out literals with bytes past ASCII and with k or s (which
// fold to the Kelvin sign and the long s as well). It is immutable, and
// safe for concurrent use.
//
// Its cursor scans as a Finder's does: for the rarest byte in either case
// (simd.Memchr2), then, when false hits come more often than one per KiB,
// for the two rarest at their distance, each in either case (foldPair, an
// AVX2 kernel: no module has a case-folded pair scan); where pair
// candidates keep failing, a call finishes with a case-folded
// Knuth-Morris-Pratt scan, linear in the text.
type FoldFinder struct {
	// want and mask are the literal compared: byte x matches position i
	// when x|mask[i] == want[i] (want in lower case, mask 0x20 at
	// letters), that is when toLower(x) == want[i].
	want, mask []byte
	// lo and up are the rarest byte in both cases, at offset at.
	lo, up byte
	at     int
	// p1 at i1 and p2 at i1+dist are the two rarest distinct bytes (as
	// want and mask), when the literal has two (then is pair).
	w1, m1, w2, m2 byte
	i1, dist       int
	then           scan
	// next is the Knuth-Morris-Pratt failure function of want.
	next []int
	// singleUnit and pairUnit are as in Finder.
	singleUnit, pairUnit int
}

// NewFold returns a FoldFinder of lit (ASCII, without k or s in either
// case).
func NewFold(lit []byte) *FoldFinder {
	n := len(lit)
	f := &FoldFinder{want: make([]byte, n), mask: make([]byte, n), then: index,
		singleUnit: max(n, singleMisses), pairUnit: max(n, pairMisses)}
	for i, c := range lit {
		f.want[i] = toLower(c)
		if toUpper(c) != f.want[i] {
			f.mask[i] = 0x20
		}
	}
	f.next = failure(f.want)
	if n == 0 {
		return f
	}
	rank := func(i int) byte { return max(simd.ByteRank(f.want[i]), simd.ByteRank(toUpper(f.want[i]))) }
	r1 := 0
	for i := range n {
		if rank(i) < rank(r1) {
			r1 = i
		}
	}
	f.lo, f.up, f.at = f.want[r1], toUpper(f.want[r1]), r1
	r2 := -1
	for i := range n {
		if f.want[i] != f.want[r1] && (r2 < 0 || rank(i) < rank(r2)) {
			r2 = i
		}
	}
	if r2 < 0 {
		return f
	}
	a, b := min(r1, r2), max(r1, r2)
	f.w1, f.m1, f.w2, f.m2 = f.want[a], f.mask[a], f.want[b], f.mask[b]
	f.i1, f.dist, f.then = a, b-a, pair
	return f
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

// failure returns the Knuth-Morris-Pratt failure function of p: next[i]
// is the length of the longest proper border of p[:i+1].
func failure(p []byte) []int {
	next := make([]int, len(p))
	for i, k := 1, 0; i < len(p); i++ {
		for k > 0 && p[i] != p[k] {
			k = next[k-1]
		}
		if p[i] == p[k] {
			k++
		}
		next[i] = k
	}
	return next
}

// Cursor starts a search through one text.
func (f *FoldFinder) Cursor() FoldCursor { return FoldCursor{f: *f} }

// FoldCursor is the state of one search through one text, as Cursor is.
type FoldCursor struct {
	f              FoldFinder
	scanned, fails int
	scan           scan
}

// matchesAt reports whether the literal matches b at s (s+len <= len(b)).
func (f *FoldFinder) matchesAt(b []byte, s int) bool {
	b = b[s : s+len(f.want)]
	for i, w := range f.want {
		if b[i]|f.mask[i] != w {
			return false
		}
	}
	return true
}

// Next returns the offset of the first occurrence of the literal in b, in
// any case, or -1 (0 for an empty literal). The work is linear in len(b)
// and the literal's length.
func (c *FoldCursor) Next(b []byte) int {
	f := &c.f
	n := len(f.want)
	from := 0
	if c.scan == single {
		if n == 0 {
			return 0
		}
		for at := f.at; c.scan == single; {
			if at >= len(b) {
				return -1
			}
			var i int
			if f.lo == f.up {
				i = bytes.IndexByte(b[at:], f.lo)
			} else {
				i = simd.Memchr2(b[at:], f.lo, f.up)
			}
			if i < 0 {
				c.scanned += len(b) - at
				return -1
			}
			c.scanned += i + 1
			s := at + i - f.at
			if s+n > len(b) {
				return -1
			}
			if f.matchesAt(b, s) {
				return s
			}
			if c.fails++; c.fails > 1+c.scanned/f.singleUnit {
				c.scan, from = f.then, s+1
			}
			at += i + 1
		}
	}
	if c.scan == index {
		return f.kmpFrom(b, from)
	}
	fails := 0
	for start := from + f.i1; start+n-f.i1 <= len(b); {
		i := foldPair(b[start:], f.w1, f.m1, f.w2, f.m2, f.dist)
		if i < 0 {
			return -1
		}
		pos := start + i - f.i1
		if pos+n > len(b) {
			return -1
		}
		if f.matchesAt(b, pos) {
			return pos
		}
		if fails++; fails > 4+(pos-from)/f.pairUnit {
			return f.kmpFrom(b, pos+1)
		}
		start += i + 1
	}
	return -1
}

// kmpFrom returns the first occurrence of the literal in b at or after
// from, in any case, or -1: Knuth-Morris-Pratt on the folded bytes.
func (f *FoldFinder) kmpFrom(b []byte, from int) int {
	n := len(f.want)
	if n == 0 {
		return min(from, len(b))
	}
	for i, k := from, 0; i < len(b); i++ {
		x := toLower(b[i])
		for k > 0 && x != f.want[k] {
			k = f.next[k-1]
		}
		if x == f.want[k] {
			k++
		}
		if k == n {
			return i - n + 1
		}
	}
	return -1
}

// foldPairFrom is foldPair from position i on, byte by byte.
func foldPairFrom(b []byte, i int, w1, m1, w2, m2 byte, dist int) int {
	for ; i+dist < len(b); i++ {
		if b[i]|m1 == w1 && b[i+dist]|m2 == w2 {
			return i
		}
	}
	return -1
}
