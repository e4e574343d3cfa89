package textjson

import (
	"errors"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func TestDecodeText(t *testing.T) {
	cases := []struct {
		name      string
		in        string
		code      fault.Code
		off       int64
		line, col int
		info      TextInfo
	}{
		{name: "empty", in: "", info: TextInfo{}},
		{name: "ascii", in: "a\nb", info: TextInfo{Bytes: 3, Runes: 3, Lines: 2}},
		{name: "crlf and final newline", in: "a\r\nb\r\n", info: TextInfo{Bytes: 6, Runes: 6, Lines: 2}},
		{name: "multibyte", in: "é日😀", info: TextInfo{Bytes: 9, Runes: 3, Lines: 1}},
		{name: "bom and nul kept", in: "\ufeffa\x00", info: TextInfo{Bytes: 5, Runes: 3, Lines: 1}},
		{name: "lone continuation", in: "ab\n\x80", code: fault.InvalidInput, off: 3, line: 2, col: 1},
		{name: "truncated sequence", in: "日本\xe8\xaa", code: fault.InvalidInput, off: 6, line: 1, col: 3},
		{name: "overlong", in: "x\xc0\xaf", code: fault.InvalidInput, off: 1, line: 1, col: 2},
		{name: "surrogate encoded", in: "\xed\xa0\x80", code: fault.InvalidInput, off: 0, line: 1, col: 1},
		{name: "latin1", in: "caf\xe9", code: fault.InvalidInput, off: 3, line: 1, col: 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, info, err := DecodeText([]byte(c.in), nil)
			if fault.CodeOf(err) != c.code {
				t.Fatalf("err %v, want code %q", err, c.code)
			}
			if c.code == "" {
				if s != c.in || info != c.info {
					t.Fatalf("got %q %+v, want %+v", s, info, c.info)
				}
				return
			}
			var se *SyntaxError
			if !errors.As(err, &se) || !errors.Is(err, ErrInvalidUTF8) {
				t.Fatalf("err %v", err)
			}
			if se.Offset != c.off || se.Line != c.line || se.Column != c.col {
				t.Fatalf("at %d %d:%d, want %d %d:%d", se.Offset, se.Line, se.Column, c.off, c.line, c.col)
			}
			if !strings.Contains(err.Error(), "byte offset") {
				t.Fatalf("message %q", err)
			}
		})
	}
}

func TestTextLimitEdge(t *testing.T) {
	doc := []byte(strings.Repeat("x", limits.TextDefaultBytes))
	if _, _, err := DecodeText(doc, nil); err != nil {
		t.Fatalf("at the default bound: %v", err)
	}
	if _, _, err := DecodeText(append(doc, 'x'), nil); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one past the default bound: %v", err)
	}
	// Configured up to the hard bound; the edge of the hard bound is
	// checked on the option, not with a 128 MiB input.
	big := &TextOptions{MaxBytes: limits.TextDefaultBytes + 1}
	if _, _, err := DecodeText(append(doc, 'x'), big); err != nil {
		t.Fatalf("raised bound: %v", err)
	}
	if _, _, err := DecodeText(doc[:10], &TextOptions{MaxBytes: limits.TextMaxBytes}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := DecodeText(doc[:10], &TextOptions{MaxBytes: limits.TextMaxBytes + 1}); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("hard bound: %v", err)
	}
}

func TestPosition(t *testing.T) {
	data := []byte("ab\nc日d\r\n\nx")
	cases := []struct {
		off       int64
		line, col int
	}{{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {7, 2, 3}, {8, 2, 4}, {10, 3, 1}, {11, 4, 1}, {12, 4, 2}, {99, 4, 2}, {-1, 1, 1}}
	for _, c := range cases {
		if l, col := position(data, c.off); l != c.line || col != c.col {
			t.Errorf("offset %d: %d:%d, want %d:%d", c.off, l, col, c.line, c.col)
		}
	}
}
