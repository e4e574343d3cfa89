package toolkit

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/catalog"
)

func TestLineWindow(t *testing.T) {
	const text = "ab\ncde\nf\ng" // four lines, the last without its newline
	for _, c := range []struct {
		offset       int
		budget       int64
		want         string
		lines, total int
		more         bool
	}{
		{0, 100, text, 4, 4, false},
		{0, int64(len(text)), text, 4, 4, false},
		{0, int64(len(text)) - 1, "ab\ncde\nf\n", 3, 4, true},
		{0, 6, "ab\n", 1, 4, true},
		{0, 2, "", 0, 4, true}, // the first line does not fit
		{1, 4, "cde\n", 1, 4, true},
		{2, 100, "f\ng", 2, 4, false},
		{4, 100, "", 0, 4, false},
	} {
		win, lines, total, more := LineWindow(text, c.offset, c.budget)
		if win != c.want || lines != c.lines || total != c.total || more != c.more {
			t.Errorf("LineWindow(%d, %d) = %q %d %d %v, want %q %d %d %v", c.offset, c.budget, win, lines, total, more, c.want, c.lines, c.total, c.more)
		}
	}
}

func TestByteWindow(t *testing.T) {
	body := strings.Repeat("x", 10) + "\n" + "ééé" // 11 bytes, then 6 of 2-byte runes
	for _, c := range []struct {
		offset, budget int64
		want           string
		next           int64
	}{
		{0, 100, body, 0},
		{0, int64(len(body)), body, 0},
		{0, 16, body[:11], 11}, // the line ends past half the budget
		{11, 3, "é", 13},       // not inside a character
		{11, 1, "", 11},        // no character fits
		{0, 4, "xxxx", 4},      // no newline: on a character
		{17, 100, "", 0},       // at the end
		{0, 20, body, 0},       // all of it
		{5, 8, "xxxxx\n", 11},  // the newline keeps more than half
		{11, 5, "éé", 15},      // two characters of three
		{0, 30, body, 0},       // larger than all of it
		{0, 12, body[:11], 11}, // newline at 10 of 12
		{10, 3, "\né", 13},     // a newline at its start keeps less than half
		{0, 0, "", 0 + 0},      // an empty budget
	} {
		win, next := ByteWindow(body, c.offset, c.budget)
		if win != c.want || next != c.next {
			t.Errorf("ByteWindow(%d, %d) = %q %d, want %q %d", c.offset, c.budget, win, next, c.want, c.next)
		}
	}
}

// FuzzByteWindow: windows read one after another give the body back
// exactly, each within its budget and valid UTF-8, and always progress
// once the budget holds a character.
func FuzzByteWindow(f *testing.F) {
	f.Add("hello\nwörld\n", int64(4))
	f.Add(strings.Repeat("日本\n", 50), int64(7))
	f.Fuzz(func(t *testing.T, body string, budget int64) {
		if !utf8.ValidString(body) || budget < utf8.UTFMax || budget > 1<<20 {
			return
		}
		var got strings.Builder
		for off := int64(0); ; {
			win, next := ByteWindow(body, off, budget)
			if int64(len(win)) > budget || !utf8.ValidString(win) || (next != 0 && next <= off) {
				t.Fatalf("window at %d: %q, next %d", off, win, next)
			}
			got.WriteString(win)
			if next == 0 {
				break
			}
			off = next
		}
		if got.String() != body {
			t.Fatalf("reassembled %q, want %q", got.String(), body)
		}
	})
}

// FuzzLineWindow: windows of whole lines read one after another give the
// text back exactly when every line fits the budget.
func FuzzLineWindow(f *testing.F) {
	f.Add("a\nbb\nccc\n", int64(4))
	f.Add("one\ntwo", int64(5))
	f.Fuzz(func(t *testing.T, text string, budget int64) {
		if budget <= 0 || budget > 1<<20 {
			return
		}
		for _, l := range strings.SplitAfter(text, "\n") {
			if int64(len(l)) > budget {
				return
			}
		}
		var got strings.Builder
		for off := 0; ; {
			win, n, _, more := LineWindow(text, off, budget)
			if int64(len(win)) > budget || (more && n == 0) {
				t.Fatalf("window at %d: %q, %d lines, more %v", off, win, n, more)
			}
			got.WriteString(win)
			if !more {
				break
			}
			off += n
		}
		if got.String() != text {
			t.Fatalf("reassembled %q, want %q", got.String(), text)
		}
	})
}

// items is a result of a list of strings, its text its JSON.
type items struct {
	Items []string `json:"items"`
	Next  int      `json:"next_offset,omitzero"`
}

func testCall(max int64) *kernel.Call {
	return &kernel.Call{Tool: &catalog.Entry{Name: "t"}, MaxOutputBytes: max}
}

func TestPrefix(t *testing.T) {
	w := strings.Repeat("w", 40) // longer than the next_offset member
	list := []string{"alpha" + w, "beta" + w, "gamma" + w, "delta" + w, strings.Repeat("z", 300)}
	build := func(shown []string, next int) items { return items{Items: shown, Next: next} }
	size := func(v items) int64 {
		res, err := kernel.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		return res.Size()
	}
	four := size(items{Items: list[:4]})
	// At the bound all of them; one byte less the first three and where
	// the next starts.
	if r, err := Prefix(testCall(four), list[:4], 0, "item", build); err != nil || len(r.Items) != 4 || r.Next != 0 {
		t.Fatalf("at the bound: %+v %v", r, err)
	}
	if r, err := Prefix(testCall(four-1), list[:4], 0, "item", build); err != nil || len(r.Items) != 3 || r.Next != 3 {
		t.Fatalf("one past the bound: %+v %v", r, err)
	}
	if r, err := Prefix(testCall(four), list, 1, "item", build); err != nil || len(r.Items) != 3 || r.Next != 4 {
		t.Fatalf("from offset 1: %+v %v", r, err)
	}
	_, err := Prefix(testCall(four), list, 4, "item", build)
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "item 5") || !strings.Contains(err.Error(), "[tool.t] max_output_bytes") {
		t.Fatalf("an item too large alone: %v", err)
	}
	if _, err := Prefix(testCall(four), list, 5, "item", build); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("an offset past the end: %v", err)
	}
	if r, err := Prefix(testCall(four), nil, 0, "item", build); err != nil || len(r.Items) != 0 {
		t.Fatalf("no items: %+v %v", r, err)
	}
}

// lined is a result whose text is a window of lines.
type lined struct {
	Span
	text string
}

func (l lined) ToolText() string { return l.text }

func TestLines(t *testing.T) {
	text := strings.Repeat("a line of text\n", 40)
	build := func(s Span, w string) any { return lined{s, w} }
	res, err := kernel.Encode(lined{Span{Lines: 40, TotalLines: 40}, text})
	if err != nil {
		t.Fatal(err)
	}
	if s, w, err := Lines(testCall(res.Size()), text, 0, "the text", build); err != nil || w != text || s.NextOffset != 0 {
		t.Fatalf("at the bound: %+v %v", s, err)
	}
	s, w, err := Lines(testCall(res.Size()-1), text, 0, "the text", build)
	if err != nil || s.NextOffset != s.Lines || !strings.HasPrefix(w, strings.Repeat("a line of text\n", s.Lines)+"\n[lines 1..") ||
		!strings.Contains(w, "t with offset="+itoa(s.NextOffset)) {
		t.Fatalf("one past the bound: %+v %q %v", s, w, err)
	}
	out, _ := kernel.Encode(lined{s, w})
	if out.Size() > res.Size()-1 {
		t.Fatalf("the window is %d bytes, over %d", out.Size(), res.Size()-1)
	}
	if _, _, err := Lines(testCall(60), text, 0, "the text", build); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("no line fits: %v", err)
	}
	if _, _, err := Lines(testCall(res.Size()), text, 40, "the text", build); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("an offset past the end: %v", err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// FuzzFitPrefix: the cut is the largest prefix that fits, whatever the
// units' sizes (uneven ones mislead the sample's prediction).
func FuzzFitPrefix(f *testing.F) {
	f.Add([]byte{1, 2, 3, 200, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 0, 0, 0}, int64(300))
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 1, 1, 1, 1, 1, 1, 1}, int64(9000))
	f.Fuzz(func(t *testing.T, sizes []byte, bound int64) {
		if bound < 0 || bound > 1<<20 || len(sizes) > 200 {
			return
		}
		list := make([]string, len(sizes))
		for i, n := range sizes {
			list[i] = strings.Repeat("x", int(n))
		}
		build := func(n int) any { return items{Items: list[:n]} }
		want := 0
		for n := len(list); n >= 0; n-- {
			if ok, _ := encodedWithin(bound, build(n)); ok {
				want = n
				break
			}
		}
		if got, err := FitPrefix(bound, len(list), build); err != nil || got != want {
			t.Fatalf("FitPrefix = %d (%v), want %d", got, err, want)
		}
	})
}
