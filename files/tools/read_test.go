package tools

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
)

func TestLineNo(t *testing.T) {
	cases := []struct {
		name string
		from []int // each a starting point, then counted up
		n    int
	}{
		{"from one", []int{1}, 25},
		{"carries", []int{95, 995, 99_995, 999_995}, 10},
		{"past six columns", []int{9_999_990, 99_999_999_990}, 20},
		{"jumps", []int{7, 3, 1_000_000, 42}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var l lineNo
			for _, from := range c.from {
				for n := from; n < from+c.n; n++ {
					if got, want := string(l.at(n)), fmt.Sprintf("%6d\t", n); got != want {
						t.Fatalf("line %d: %q, want %q", n, got, want)
					}
				}
			}
		})
	}
}

func TestIsASCII(t *testing.T) {
	for n := range 80 {
		b := []byte(strings.Repeat("a", n))
		if !isASCII(b) {
			t.Fatalf("%d ASCII bytes", n)
		}
		for i := range n {
			for _, c := range []byte{0x80, 0xc3, 0xff} {
				b[i] = c
				if isASCII(b) {
					t.Fatalf("byte %#x at %d of %d not seen", c, i, n)
				}
			}
			b[i] = 'a'
		}
	}
}

// UTF-8 is checked per line unless the line's bytes came from ASCII
// chunks only: lines crossing the boundary of two read chunks (64 KiB)
// are checked whole, whatever the chunks hold.
func TestReadUTF8AcrossChunks(t *testing.T) {
	const chunk = 64 << 10
	root := testkit.TempDir(t)
	// Lines of 100 bytes up to 36 bytes before the chunk boundary, then 34
	// more: a line that starts next has two bytes in the first chunk.
	ascii := strings.Repeat(strings.Repeat("a", 99)+"\n", chunk/100) + strings.Repeat("b", 34)
	cases := []struct {
		name    string
		content string
		bad     int // offset of the first invalid byte, or -1
	}{
		{"rune split across chunks", ascii + "x\xc3\xa9tail\n", -1},
		{"lead byte then ASCII chunk", ascii + "x\xc3" + "abc\n", chunk - 1},
		{"invalid in second chunk of a line", ascii + "xy" + "ok\xfe\n", chunk + 2},
		{"ASCII chunk then invalid line", strings.Repeat("a\n", chunk/2) + "é\xffz\n", chunk + 2},
		{"non-ASCII chunk, valid", strings.Repeat("é\n", chunk/3) + "end\n", -1},
	}
	rt := newRuntimePolicies(t, nil, map[string]kernel.Policy{ReadFile: {MaxOutputBytes: 4 << 20}})
	s := newSession(t, rt, allEffects, root)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprintf("f%d", i)
			writeFile(t, filepath.Join(root, name), c.content)
			res, err := testkit.Call(t, s, ReadFile, obj{"path": name, "limit": 100_000})
			if c.bad < 0 {
				if err != nil {
					t.Fatal(err)
				}
				if res.Text != reference(c.content) {
					t.Fatal("text differs from the reference")
				}
				return
			}
			if fault.CodeOf(err) != fault.InvalidInput || !strings.Contains(err.Error(), fmt.Sprintf("offset %d ", c.bad)) {
				t.Fatalf("want invalid_input at offset %d, got %v", c.bad, err)
			}
		})
	}
}
