package tools

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/capkit/capkit/limits"
)

// FuzzEditMatch: the matcher never panics; a planned edit replaces exactly
// the occurrences it reports of old (as given or with line endings adapted
// to a CRLF file), unique unless all; a refusal changes nothing; the diff
// stays bounded.
func FuzzEditMatch(f *testing.F) {
	for _, s := range [][4]string{
		{"a\nb\nc\n", "b", "B", ""},
		{"a\r\nb\r\nc\r\n", "a\nb\n", "x\ny\n", ""},
		{"a\r\nb\n", "b\n", "c\n", ""},
		{"aaa", "a", "b", "all"},
		{"aaa", "aa", "b", ""},
		{"x", "", "y", ""},
		{"\r\n\r\n", "\n", "\r\n", "all"},
		{"same", "same", "same", ""},
		{strings.Repeat("line\n", 50), "line", "LINE", "all"},
	} {
		f.Add(s[0], s[1], s[2], s[3] == "all")
	}
	f.Fuzz(func(t *testing.T, content, old, new string, all bool) {
		m, err := matchEdit([]byte(content), old, new, all)
		if err != nil {
			return
		}
		crlf := isCRLF([]byte(content))
		if m.old != old && m.old != toCRLF(old) {
			t.Fatalf("matched %q for old %q", m.old, old)
		}
		if m.new != new && m.new != toCRLF(new) {
			t.Fatalf("inserting %q for new %q", m.new, new)
		}
		if !crlf && (m.old != old || m.new != new) {
			t.Fatalf("line endings adapted in a file that is not CRLF")
		}
		if m.old == m.new || len(m.at) == 0 || (!all && len(m.at) != 1) {
			t.Fatalf("plan %+v for all=%v", m, all)
		}
		n := 1
		if all {
			n = -1
		}
		want := strings.Replace(content, m.old, m.new, n)
		if got := string(applied(t, m, content)); got != want {
			t.Fatalf("apply = %q, want %q", got, want)
		}
		if all && m.count != strings.Count(content, m.old) {
			t.Fatalf("%d occurrences, strings.Count says %d", m.count, strings.Count(content, m.old))
		}
		for i, at := range m.at {
			if !bytes.HasPrefix([]byte(content[at:]), []byte(m.old)) || i > 0 && at < m.at[i-1]+len(m.old) {
				t.Fatalf("bad occurrence %d at %d", i, at)
			}
		}
		if d := diffOf(m, "f", content); len(d) > limits.DiffMaxBytes+512 {
			t.Fatalf("diff of %d bytes", len(d))
		}
	})
}

func TestMatchEdit(t *testing.T) {
	cases := []struct {
		name, content, old, new string
		all                     bool
		want                    string
		err                     string
	}{
		{"unique", "a b c", "b", "B", false, "a B c", ""},
		{"twice", "b b", "b", "B", false, "", "occurs 2 times"},
		{"many counted", "b b b b b", "b", "B", false, "", "occurs 5 times"},
		{"all", "b b", "b", "B", true, "B B", ""},
		{"overlapping counts once per position", "aaa", "aa", "x", true, "xa", ""},
		{"missing", "abc", "d", "e", false, "", "not found"},
		{"crlf adapted", "a\r\nb\r\n", "a\nb", "x\ny", false, "x\r\ny\r\n", ""},
		{"crlf new lines adapted", "a\r\nb\r\n", "b", "b\nc", false, "a\r\nb\r\nc\r\n", ""},
		{"mixed file as given", "a\r\nb\nc\n", "b\nc", "B\nC", false, "a\r\nB\r\nC\n", ""},
		{"lf file untouched", "a\nb\n", "a\nb", "x\r\ny", false, "x\r\ny\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := matchEdit([]byte(c.content), c.old, c.new, c.all)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(applied(t, m, c.content)); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestEditDiffBound(t *testing.T) {
	content := strings.Repeat(strings.Repeat("x", 300)+" target\n", 200)
	m, err := matchEdit([]byte(content), "target", "TARGET", true)
	if err != nil {
		t.Fatal(err)
	}
	d := diffOf(m, "f", content)
	if len(d) > limits.DiffMaxBytes+200 || !strings.Contains(d, "more replacements not shown") {
		t.Fatalf("diff of %d bytes:\n%.300s", len(d), d)
	}
	if strings.Count(d, "@@ -") > limits.EditMaxDiffHunks {
		t.Fatalf("%d hunks", strings.Count(d, "@@ -"))
	}
}

// applied is m applied to content.
func applied(t *testing.T, m editMatch, content string) []byte {
	t.Helper()
	out, err := m.apply(context.Background(), make([]byte, 0, m.size(len(content))), []byte(content))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffOf is the diff of m in content.
func diffOf(m editMatch, name, content string) string {
	d := diffWriter{name: name}
	d.add(m, []byte(content))
	return d.String(m.count)
}
