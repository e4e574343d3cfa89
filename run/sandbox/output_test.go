package sandbox

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/capkit/capkit/limits"
)

func TestHeadTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		max    int
		writes []string
		want   string
		omit   int64
	}{
		{"empty", 10, nil, "", 0},
		{"at the bound", 10, []string{"0123456789"}, "0123456789", 0},
		{"one past", 10, []string{"0123456789x"}, "01234\n[... 1 bytes omitted ...]\n6789x", 1},
		{"small writes", 10, strings.Split("abcdefghijklmnopqrstuvwxyz", ""), "abcde\n[... 16 bytes omitted ...]\nvwxyz", 16},
		{"one long write", 10, []string{strings.Repeat("a", 5) + strings.Repeat("b", 1000) + "12345"}, "aaaaa\n[... 1000 bytes omitted ...]\n12345", 1000},
		// é is two bytes: neither half of one is shown.
		{"utf-8 cut in the head", 6, []string{"aaé" + "xxxxxxx" + "éb"}, "aa\n[... 9 bytes omitted ...]\néb", 9},
		{"utf-8 cut in the tail", 6, []string{"aaa" + "xxxx" + "éé"}, "aaa\n[... 6 bytes omitted ...]\né", 6},
		{"invalid utf-8", 10, []string{"a\xffb"}, "a\uFFFDb", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHeadTail(tc.max)
			var total int64
			for _, w := range tc.writes {
				n, err := h.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
				total += int64(n)
			}
			o := h.output()
			if o.Text != tc.want || o.Omitted != tc.omit || o.Bytes != total {
				t.Errorf("got %q omitted %d of %d, want %q omitted %d", o.Text, o.Omitted, o.Bytes, tc.want, tc.omit)
			}
		})
	}
}

func TestDefaultOutputBound(t *testing.T) {
	for _, n := range []int{limits.RunDefaultOutputBytes, limits.RunDefaultOutputBytes + 1} {
		h := newHeadTail(limits.RunDefaultOutputBytes)
		h.Write([]byte(strings.Repeat("a", n)))
		if o := h.output(); o.Omitted != int64(n-limits.RunDefaultOutputBytes) || o.Bytes != int64(n) {
			t.Errorf("%d bytes: omitted %d", n, o.Omitted)
		}
	}
}

// FuzzHeadTail checks the invariants: memory within the bound, the kept
// bytes plus the omitted count equal to what was written.
func FuzzHeadTail(f *testing.F) {
	f.Add(7, []byte("hello, world"), 3)
	f.Add(256, []byte(strings.Repeat("é", 300)), 17)
	f.Fuzz(func(t *testing.T, max int, data []byte, chunk int) {
		if max < 2 || max > 1<<16 || chunk < 1 {
			return
		}
		h := newHeadTail(max)
		for p := data; len(p) > 0; {
			k := min(chunk, len(p))
			h.Write(p[:k])
			p = p[k:]
		}
		if len(h.head)+len(h.tail) > max {
			t.Fatalf("kept %d bytes, bound %d", len(h.head)+len(h.tail), max)
		}
		o := h.output()
		if o.Omitted == 0 {
			if o.Text != strings.ToValidUTF8(string(data), "\uFFFD") {
				t.Fatalf("uncut output differs")
			}
			return
		}
		marker := fmt.Sprintf("\n[... %d bytes omitted ...]\n", o.Omitted)
		head, tail, ok := strings.Cut(o.Text, marker)
		if !ok || o.Bytes != int64(len(data)) {
			t.Fatalf("no marker in %q", o.Text)
		}
		if utf8.Valid(data) && (!strings.HasPrefix(string(data), head) || !strings.HasSuffix(string(data), tail) ||
			int64(len(head)+len(tail))+o.Omitted != o.Bytes) {
			t.Fatalf("head %q and tail %q with %d omitted do not make up %q", head, tail, o.Omitted, data)
		}
	})
}
