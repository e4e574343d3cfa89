package clip

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/capkit/capkit/limits"
)

func TestN(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven cha…"},
		{"aé", 2, "a…"}, // é is two bytes: never split
		{"日本語", 4, "日…"},
		{"a\xffb", 10, "a\uFFFDb"},
		{"", 3, ""},
	} {
		if got := N(c.in, c.max); got != c.want {
			t.Errorf("N(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
	long := strings.Repeat("é", limits.EchoMaxBytes)
	if got := Text(long); !utf8.ValidString(got) || len(got) > limits.EchoMaxBytes+len("…") {
		t.Errorf("Text cut %d bytes into %q", len(long), got)
	}
}

func FuzzN(f *testing.F) {
	f.Add("héllo wörld", 5)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		got := N(s, max)
		if !utf8.ValidString(got) {
			t.Fatalf("N(%q, %d) = %q: invalid UTF-8", s, max, got)
		}
		if body := strings.TrimSuffix(got, "…"); len(body) > max && body != strings.ToValidUTF8(s, "\uFFFD") {
			t.Fatalf("N(%q, %d) = %q: over the bound", s, max, got)
		}
	})
}
