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

func TestAppendEscaped(t *testing.T) {
	for _, s := range escapeCases {
		for pre := range 9 { // every alignment against the 8-byte words
			in := strings.Repeat("p", pre) + s
			if got, want := string(appendEscaped(nil, in)), quoteRef(in); got != want {
				t.Errorf("appendEscaped(%q) = %q, want %q", in, got, want)
			}
		}
	}
	if got := string(appendEscaped([]byte("keep:"), "x")); got != "keep:x" {
		t.Errorf("dst not kept: %q", got)
	}
}

func FuzzAppendEscaped(f *testing.F) {
	for _, s := range escapeCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendEscaped(nil, s)), quoteRef(s); got != want {
			t.Fatalf("appendEscaped(%q) = %q, want %q", s, got, want)
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
		{"awkward", bigText(512 * 1024)},
	} {
		b.Run(tc.name+"/appendEscaped", func(b *testing.B) {
			var buf []byte
			b.SetBytes(int64(len(tc.text)))
			for b.Loop() {
				buf = appendEscaped(buf[:0], tc.text)
			}
		})
		b.Run(tc.name+"/jsontext.AppendQuote", func(b *testing.B) {
			var buf []byte
			b.SetBytes(int64(len(tc.text)))
			for b.Loop() {
				buf, _ = jsontext.AppendQuote(buf[:0], tc.text)
			}
		})
	}
}
