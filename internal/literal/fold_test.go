package literal

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// asciiLower lowers the ASCII letters of b only, as the fold finder
// compares.
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = toLower(c)
	}
	return out
}

// checkFold fails t unless a fold cursor finds every start bytes.Index
// finds in the lowered text, from one cursor and from a fresh one at each
// offset.
func checkFold(t *testing.T, lit, text []byte) {
	t.Helper()
	f := NewFold(lit)
	lt, ll := asciiLower(text), asciiLower(lit)
	var got []int
	c := f.Cursor()
	for from := 0; from <= len(text); {
		i := c.Next(text[from:])
		if i < 0 {
			break
		}
		got = append(got, from+i)
		from += i + 1
	}
	if want := indexAll(lt, ll); !slices.Equal(got, want) {
		t.Fatalf("%q in %q: starts %v, want %v", lit, text, got, want)
	}
	for from := 0; from <= len(text); from++ {
		c := f.Cursor()
		if got, want := c.Next(text[from:]), bytes.Index(lt[from:], ll); got != want {
			t.Fatalf("%q in %q[%d:]: %d, want %d", lit, text, from, got, want)
		}
	}
}

var foldCases = []struct{ name, lit, text string }{
	{"empty literal", "", "abc"},
	{"one letter", "x", "aXbxc"},
	{"one symbol", "_", "a_b"},
	{"mixed case", "Context", "ctx CONTEXT context.Context cOnTeXt"},
	{"longer than text", "context", "CONT"},
	{"symbol with the case bit", "a?b", "A?B a\x1fb a?b"},
	{"symbol without the case bit", "a@b", "A@B a`b a@b"},
	{"brackets are not letters", "[x]", "{X} [X] {x}"},
	{"one value", "aaa", "AaAa"},
	{"text full of the rare byte", "xxxxxxxxyq", strings.Repeat("X", 500) + "yQ" + strings.Repeat("x", 500) + "xyq"},
	{"text full of the pair", "xy" + strings.Repeat("a", 40) + "q", strings.Repeat("XY"+strings.Repeat("A", 40), 50) + "Q"},
	{"overlapping", "aba", "ABAbaBA"},
	{"high bytes", "ab", "\xc1b\xe1b ab"},
	{"source", "ErrShortBuffer", "if err == io.errshortbuffer {\n\treturn io.ERRSHORTBUFFER\n}"},
}

// TestFoldNext: on each case, the cursor finds every case-folded start,
// from every offset.
func TestFoldNext(t *testing.T) {
	for _, c := range foldCases {
		t.Run(c.name, func(t *testing.T) { checkFold(t, []byte(c.lit), []byte(c.text)) })
	}
}

// TestFoldNextRandom: random texts and literals over small alphabets of
// both cases, so every scan (single, pair, Knuth-Morris-Pratt) runs.
func TestFoldNextRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := range 3000 {
		alpha := []string{"xXyYq\n", "aAb", "conteXT Buffer\n?\x1f"}[iter%3]
		text := make([]byte, rng.IntN(600))
		for i := range text {
			text[i] = alpha[rng.IntN(len(alpha))]
		}
		lit := make([]byte, 1+rng.IntN(6))
		for i := range lit {
			lit[i] = alpha[rng.IntN(len(alpha))]
		}
		if iter%4 == 0 && len(text) > 10 {
			lit = text[5 : 5+min(len(text)-5, 1+rng.IntN(20))]
		}
		checkFold(t, lit, text)
	}
}

// TestFoldPair: the AVX2 kernel and the byte loop agree at every length
// and distance around the 32-byte blocks.
func TestFoldPair(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for n := range 200 {
		for _, dist := range []int{1, 2, 7, 31, 32, 33, 100} {
			b := make([]byte, n)
			for i := range b {
				b[i] = "aAbB?\x1f"[rng.IntN(6)]
			}
			for _, p := range [][4]byte{{'a', 0x20, 'b', 0x20}, {'?', 0, 'a', 0x20}, {'b', 0x20, '?', 0}} {
				if got, want := foldPair(b, p[0], p[1], p[2], p[3], dist), foldPairFrom(b, 0, p[0], p[1], p[2], p[3], dist); got != want {
					t.Fatalf("%q, pair %q at distance %d: %d, want %d", b, p, dist, got, want)
				}
			}
		}
	}
}

// TestFoldCursorScans: frequent false hits of the rare byte turn a cursor
// to the pair scan.
func TestFoldCursorScans(t *testing.T) {
	lit := []byte("Zebra")
	text := bytes.Repeat([]byte("-"), 64*singleMisses)
	for i := 100; i < len(text); i += 100 {
		text[i] = 'z'
	}
	copy(text[len(text)-len(lit):], "ZEBRA")
	cur := NewFold(lit).Cursor()
	if got, want := cur.Next(text), len(text)-len(lit); got != want || cur.scan != pair {
		t.Fatalf("found at %d in scan %d, want %d in the pair scan", got, cur.scan, want)
	}
}

// FuzzFoldNext: for any ASCII literal and text, a fold cursor finds every
// start bytes.Index finds in the lowered text.
func FuzzFoldNext(f *testing.F) {
	for _, c := range foldCases {
		f.Add([]byte(c.lit), []byte(c.text))
	}
	f.Fuzz(func(t *testing.T, lit, text []byte) {
		if len(lit) > 64 || len(text) > 1024 {
			return
		}
		for _, c := range lit {
			if c >= 0x80 || toLower(c) == 'k' || toLower(c) == 's' {
				return
			}
		}
		checkFold(t, lit, text)
	})
}
