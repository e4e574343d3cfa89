package textjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
)

// FuzzJSON checks that no input panics or escapes the rules: what is
// accepted is valid JSON to encoding/json as well, Decode agrees with
// Validate, the canonical form is no longer than the input, valid, and a
// fixed point; what is refused is a located invalid_input or limit.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",true,null]}`, `{"a":1,"a":2}`, `[1e999]`, `"\ud800"`, `[01]`, "\ufeff{}", `12345678901234567890`, `[[[[]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := Validate(bg, data, nil)
		_, dst, derr := Decode(bg, data, nil)
		if (err == nil) != (derr == nil) || st != dst {
			t.Fatalf("Validate %v %+v, Decode %v %+v", err, st, derr, dst)
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				if fault.CodeOf(err) != fault.Limit {
					t.Fatalf("unlocated error %v", err)
				}
				return
			}
			if se.Offset < 0 || se.Offset > int64(len(data)) || se.Line < 1 || se.Column < 1 {
				t.Fatalf("bad location %+v", se)
			}
			if c := fault.CodeOf(err); c != fault.InvalidInput && c != fault.Limit {
				t.Fatalf("code %q", c)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted what encoding/json refuses: %q", data)
		}
		canon, _, err := Canonical(bg, data, nil)
		if err != nil {
			t.Fatalf("Canonical refused what Validate accepted: %v", err)
		}
		if len(canon) > len(data) {
			t.Fatalf("canonical form longer than input: %q -> %q", data, canon)
		}
		again, _, err := Canonical(bg, canon, nil)
		if err != nil || !bytes.Equal(again, canon) {
			t.Fatalf("canonical form not a fixed point: %q -> %q (%v)", canon, again, err)
		}
	})
}

// FuzzText checks that DecodeText accepts exactly valid UTF-8 and locates
// the first invalid byte.
func FuzzText(f *testing.F) {
	for _, s := range []string{"", "a\nb", "caf\xe9", "日本\xe8", "\xed\xa0\x80"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, info, err := DecodeText(data, nil)
		if utf8.Valid(data) {
			if err != nil || s != string(data) || info.Runes != int64(utf8.RuneCount(data)) {
				t.Fatalf("valid text refused or changed: %v", err)
			}
			return
		}
		var se *SyntaxError
		if !errors.As(err, &se) || !utf8.Valid(data[:se.Offset]) || utf8.FullRune(data[se.Offset:]) && utf8.Valid(data[se.Offset:se.Offset+1]) {
			t.Fatalf("bad location for %q: %v", data, err)
		}
	})
}
