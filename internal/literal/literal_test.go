package literal

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// indexAll returns every start of lit in text, overlapping ones too, as
// bytes.Index finds them.
func indexAll(text, lit []byte) []int {
	var at []int
	for from := 0; from <= len(text); {
		i := bytes.Index(text[from:], lit)
		if i < 0 {
			break
		}
		at = append(at, from+i)
		from += i + 1
	}
	return at
}

// nextAll returns every start of lit in text as one cursor finds them,
// each search resuming one byte past the start before.
func nextAll(f *Finder, text []byte) []int {
	var at []int
	c := f.Cursor()
	for from := 0; from <= len(text); {
		i := c.Next(text[from:])
		if i < 0 {
			break
		}
		at = append(at, from+i)
		from += i + 1
	}
	return at
}

// check fails t unless a cursor finds every start bytes.Index finds, and a
// fresh cursor at each offset finds what bytes.Index finds there.
func check(t *testing.T, lit, text []byte) {
	t.Helper()
	f := New(lit)
	if got, want := nextAll(f, text), indexAll(text, lit); !slices.Equal(got, want) {
		t.Fatalf("%q in %q: starts %v, bytes.Index %v", lit, text, got, want)
	}
	for from := 0; from <= len(text); from++ {
		c := f.Cursor()
		if got, want := c.Next(text[from:]), bytes.Index(text[from:], lit); got != want {
			t.Fatalf("%q in %q[%d:]: %d, bytes.Index %d", lit, text, from, got, want)
		}
	}
}

var cases = []struct{ name, lit, text string }{
	{"empty literal", "", "abc"},
	{"empty literal and text", "", ""},
	{"one byte", "x", "abxcxx"},
	{"one byte absent", "x", "abc"},
	{"one byte empty text", "x", ""},
	{"longer than text", "context", "cont"},
	{"longer than text by one", "abcd", "abc"},
	{"whole text", "context", "context"},
	{"at start and end", "ab", "abxxab"},
	{"rare byte last", "aaaZ", "aZaaZaaaZ"},
	{"rare byte first", "Zaaa", "ZaaZaaaZaaa"},
	{"one value", "aaa", "aabaaaab"},
	{"one value full text", "aaa", strings.Repeat("a", 300)},
	{"text full of the rare byte", "ZZZZZZZZq", strings.Repeat("Z", 500) + "q" + strings.Repeat("Z", 500)},
	{"text full of the pair", "Zq" + strings.Repeat("a", 40) + "x", strings.Repeat("Zq"+strings.Repeat("a", 40), 50) + "x"},
	{"overlapping", "aba", "abababa"},
	{"multibyte", "café", "naïve café, cafe, café"},
	{"absent, rare byte common", "xcontext", strings.Repeat("ctx context.Context\n", 200)},
	{"source", "ErrShortBuffer", "if err == io.ErrShortBuffer {\n\treturn io.ErrShortBuffer\n}"},
	{"NUL and high bytes", "\x00\xff", "a\x00\xff\x00\x00\xffb"},
}

// TestNext: on each case, the cursor finds every start bytes.Index finds,
// from every offset.
func TestNext(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, []byte(c.lit), []byte(c.text)) })
	}
}

// TestNextRandom: random texts and literals over small alphabets, so the
// rare bytes are everywhere (the pair scan and the bytes.Index fallback),
// and over source-like ones.
func TestNextRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := range 3000 {
		alpha := []string{"xyq\n", "ab", "context Buffer\n"}[iter%3]
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
		check(t, lit, text)
	}
}

// TestCursorScans: false hits of the rare byte more often than one per
// KiB turn a cursor to the pair scan for good; rarer ones do not.
func TestCursorScans(t *testing.T) {
	lit := []byte("Zebra")
	for _, c := range []struct {
		every int
		scan  scan
	}{
		{100, pair},
		{singleMisses / 2, pair},
		{2 * singleMisses, single},
		{8 * singleMisses, single},
	} {
		text := bytes.Repeat([]byte("-"), 64*singleMisses)
		for i := c.every; i < len(text); i += c.every {
			text[i] = 'Z'
		}
		copy(text[len(text)-len(lit):], lit)
		cur := New(lit).Cursor()
		if got, want := cur.Next(text), len(text)-len(lit); got != want {
			t.Fatalf("a false hit every %d bytes: found at %d, want %d", c.every, got, want)
		}
		if cur.scan != c.scan {
			t.Errorf("a false hit every %d bytes: scan %d, want %d", c.every, cur.scan, c.scan)
		}
	}
}

// FuzzNext: for any literal and text, a cursor finds every start
// bytes.Index finds.
func FuzzNext(f *testing.F) {
	for _, c := range cases {
		f.Add([]byte(c.lit), []byte(c.text))
	}
	f.Fuzz(func(t *testing.T, lit, text []byte) {
		if len(lit) > 64 || len(text) > 1024 {
			return
		}
		check(t, lit, text)
	})
}
