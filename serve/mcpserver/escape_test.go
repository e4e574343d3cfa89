package mcpserver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// quoteRef is jsontext's quoting without the quotes: the reference
// appendEscaped must match byte for byte.
func quoteRef(s string) string {
	q, _ := jsontext.AppendQuote(nil, s)
	return string(q[1 : len(q)-1])
}

var escapeCases = []string{
	"",
	"plain ascii text that needs nothing",
	"\"", "\\", "\x00", "\x1f", "\x7f", "\t\n\r\b\f",
	"a\"b\\c\td\ne",
	"é日本🎉",
	"\xff", "\xfe\xff", "\xe2\x82", "\xe2\x82\xac", "\xed\xa0\x80", // truncated, valid €, surrogate
	"\u2028\u2029", "<>&", "\ufffd",
	strings.Repeat("x", 7) + "\"" + strings.Repeat("y", 9),
	strings.Repeat("abcdefg\x01", 5),
	strings.Repeat("\x80", 17),
	"0123456789abcdef\"", "0123456\x1f", "\x1f0123456", " !#$%&'()*+,-./",
}

// longEscapeCases are longer than escapeASCII's blocks of 32 bytes, so
// that it runs, stops at non-ASCII bytes and leaves tails.
var longEscapeCases = []string{
	strings.Repeat("0123456789abcdef", 5),
	strings.Repeat("\t\"x\\\n", 20),
	strings.Repeat("x", 31) + "\x01" + strings.Repeat("y", 33) + "\x1f",
	strings.Repeat("a", 40) + "é" + strings.Repeat("b", 40) + "\xff" + strings.Repeat("c", 40),
	strings.Repeat("日本語のテキスト", 10) + strings.Repeat("ascii", 10),
	strings.Repeat("\x00\x7f\x80", 30),
	strings.Repeat("line\r\n", 20) + "\u2028" + strings.Repeat("\"", 40),
	numberedSource(300),
}

// escapeModes are appendEscaped's two paths: escapeASCII's blocks where
// the CPU allows, and words alone.
var escapeModes = []struct {
	name string
	simd bool
}{{"simd", haveSIMD}, {"words", false}}

func TestAppendEscaped(t *testing.T) {
	for _, m := range escapeModes {
		for _, s := range append(escapeCases, longEscapeCases...) {
			for pre := range 34 { // every alignment against the words and blocks
				in := strings.Repeat("p", pre) + s
				if got, want := string(appendEscapedWith(nil, in, m.simd)), quoteRef(in); got != want {
					t.Errorf("%s: appendEscaped(%q) = %q, want %q", m.name, in, got, want)
				}
			}
		}
		if got := string(appendEscapedWith([]byte("keep:"), "x", m.simd)); got != "keep:x" {
			t.Errorf("%s: dst not kept: %q", m.name, got)
		}
		// dst with little room left, so that escapeASCII returns for room
		in := strings.Repeat("\n", 200)
		for room := range 80 {
			dst := make([]byte, 5, 5+room)
			if got, want := string(appendEscapedWith(dst, in, m.simd)[5:]), quoteRef(in); got != want {
				t.Errorf("%s: room %d: appendEscaped = %q, want %q", m.name, room, got, want)
			}
		}
	}
}

func FuzzAppendEscaped(f *testing.F) {
	for _, s := range append(escapeCases, longEscapeCases...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// s, and s repeated past a few of escapeASCII's blocks, each copy
		// at another alignment against them when len(s) is not a multiple
		// of 32
		long := s
		for len(s) > 0 && len(long) < 4*simdMin {
			long += s
		}
		for _, in := range []string{s, long} {
			want := quoteRef(in)
			for _, m := range escapeModes {
				if got := string(appendEscapedWith(nil, in, m.simd)); got != want {
					t.Fatalf("%s: appendEscaped(%q) = %q, want %q", m.name, in, got, want)
				}
			}
		}
	})
}

// numberedSource is what read_file returns for source code: numbered
// lines with tabs and quotes.
func numberedSource(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%6d\t\tif x := lookup(\"key %06d\", %d); x != nil { return x } // line\n", i+1, i, i%97)
	}
	return b.String()
}

func BenchmarkEscape(b *testing.B) {
	for _, tc := range []struct{ name, text string }{
		{"numbered-source", numberedSource(512 * 1024)},
		{"numbered-source-5KiB", numberedSource(5 * 1024)}, // a small read's
		{"awkward", bigText(512 * 1024)},
	} {
		for _, m := range escapeModes {
			b.Run(tc.name+"/appendEscaped-"+m.name, func(b *testing.B) {
				var buf []byte
				b.SetBytes(int64(len(tc.text)))
				for b.Loop() {
					buf = appendEscapedWith(buf[:0], tc.text, m.simd)
				}
			})
		}
		b.Run(tc.name+"/jsontext.AppendQuote", func(b *testing.B) {
			var buf []byte
			b.SetBytes(int64(len(tc.text)))
			for b.Loop() {
				buf, _ = jsontext.AppendQuote(buf[:0], tc.text)
			}
		})
	}
}
