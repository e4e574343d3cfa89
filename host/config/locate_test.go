package config

import (
	"strings"
	"testing"
)

func TestLocate(t *testing.T) {
	doc := strings.Join([]string{
		`audit_log = "a"`,      // 1
		`# comment`,            // 2
		`[[root]]`,             // 3
		`path = "p0"`,          // 4
		`[[root]]`,             // 5
		`path = "p1"`,          // 6
		`[actor.bob]`,          // 7
		`effects = [`,          // 8
		`  "read_file",`,       // 9
		`  # comment`,          // 10
		`  "fly",`,             // 11
		`]`,                    // 12
		`tool.x.max_calls = 3`, // 13
		`inline = { a = 1, b = { c = [1, {d = 2}] } }`, // 14
		`[actor."quoted key"]`,                         // 15
		`[[a]]`,                                        // 16
		`[[a.b]]`,                                      // 17
		`x = 1`,                                        // 18
		`[[a]]`,                                        // 19
		`[[a.b]]`,                                      // 20
		`y = 1`,                                        // 21
		"crlf = 1\r",                                   // 22
		`last = 2`,                                     // 23
	}, "\n")
	l := locate([]byte(doc))
	cases := []struct {
		path string
		line int
	}{
		{"audit_log", 1},
		{"root", 3},
		{"root[0]", 3},
		{"root[0].path", 4},
		{"root[1].path", 6},
		{"actor.bob", 7},
		{"actor.bob.effects", 8},
		{"actor.bob.effects[0]", 9},
		{"actor.bob.effects[1]", 11},
		{"actor.bob.effects[2]", 8}, // no such element: the key's line
		{"actor.bob.tool.x.max_calls", 13},
		{"actor.bob.inline.b.c[1].d", 14},
		{"actor.quoted key", 15},
		{"a[0].b[0].x", 18},
		{"a[1].b[0].y", 21},
		{"a[1].b[0]", 20},
		{"a[1].b[0].crlf", 22},
		{"a[1].b[0].last", 23},
		{"actor.bob.nothing.here", 7}, // nearest enclosing table
		{"missing", 0},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			if got := l.line(c.path); got != c.line {
				t.Fatalf("line(%q) = %d, want %d", c.path, got, c.line)
			}
		})
	}
}

// FuzzLocate checks that any document, valid or not, is indexed without a
// panic and every line found lies in the document.
func FuzzLocate(f *testing.F) {
	f.Add([]byte("[[root]]\npath = \"x\"\n[actor.a]\neffects = [\"read_file\",\n\"fly\"]\n"))
	f.Add([]byte("a = { b = [ { c = 1 }, [2, 3] ] }\n[[x.y]]\n[[x]]\n[[x.y]]\nz = 'q'"))
	f.Add([]byte("[a]\n[a]\nb = \"\"\"\nmulti\nline\"\"\"\nc = 1979-05-27T07:32:00Z\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l := locate(data)
		lines := strings.Count(string(data), "\n") + 1
		for p, n := range l.lines {
			if n < 0 || n > lines {
				t.Fatalf("%q at line %d of %d", p, n, lines)
			}
		}
	})
}
