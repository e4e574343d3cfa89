package tabular

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestUTF8Stream: whatever the chunking, the stream check finds the same
// first invalid byte as a check of the whole.
func TestUTF8Stream(t *testing.T) {
	inputs := []string{
		"", "ascii only", "é日😀 mixed", "caf\xe9", "\xe6\x97", "\xe6\x97\xa5\xe6",
		"ok\xffok", "日本\xe8\xaa", "\xed\xa0\x80", "\xc0\xaf", "a😀\xf0\x9f\x98", "😀😀\x80", "\xf4\x90\x80\x80",
	}
	for _, in := range inputs {
		want := int64(-1)
		if !utf8.ValidString(in) {
			want = int64(firstInvalid([]byte(in)))
		}
		for size := 1; size <= 7; size++ {
			u := newUTF8Stream()
			for i := 0; i < len(in); i += size {
				u.write([]byte(in[i:min(i+size, len(in))]))
			}
			u.end()
			if u.bad != want {
				t.Errorf("%q in chunks of %d: bad at %d, want %d", in, size, u.bad, want)
			}
		}
	}
}

func TestUTF8ErrorsLocated(t *testing.T) {
	cases := []struct{ in, msg string }{
		{"a,b\n1,Jos\xe9\n", "data row 1, field 2 (line 2, column 3): byte 4"},
		{"a,\xffb\n1,2\n", "header, field 2 (line 1, column 3): byte 1"},
		{"a,b\n1,\"x\ny\xe6\"\n", "data row 1, field 2 (line 2, column 3): byte 4"},
		{"a\n1\n\xe6", "data row 2, field 1 (line 3, column 1): byte 1"},
	}
	for _, c := range cases {
		_, err := Scan(bg, []byte(c.in), nil)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: %v, want %q", c.in, err, c.msg)
		}
	}
}
