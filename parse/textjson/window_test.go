package textjson

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

func TestCanonicalWindows(t *testing.T) {
	var doc strings.Builder
	doc.WriteString("{")
	for i := range 400 {
		fmt.Fprintf(&doc, `"k%03d": "wörd %s", `, i, strings.Repeat("é", i%9))
	}
	doc.WriteString(`"z": 1}`)
	files := testkit.Files{"d.json": []byte(doc.String())}
	session := func(max int64) *kernel.Session {
		rt := testkit.RuntimeBound(t, RegisterTools, &ToolOptions{Files: files}, max)
		return testkit.Session(t, rt, testkit.Grant(t, []string{"/srv"}, capability.Parse, capability.ReadFile))
	}
	args := map[string]any{"path": "d.json"}
	all, err := testkit.Call(t, session(limits.HardMaxOutputBytes), "json_canonical", args)
	if err != nil {
		t.Fatal(err)
	}
	canonical := all.Text
	next := func(res *kernel.Result) int64 {
		var r CanonicalResult
		if err := json.Unmarshal(res.Structured, &r); err != nil {
			t.Fatal(err)
		}
		return r.NextOffset
	}
	// At the bound the whole text; one byte less a window and where the
	// next starts.
	if res, err := testkit.Call(t, session(all.Size()), "json_canonical", args); err != nil || res.Text != canonical || next(res) != 0 {
		t.Fatalf("at the bound: %v", err)
	}
	res, err := testkit.Call(t, session(all.Size()-1), "json_canonical", args)
	if err != nil || res.Size() > all.Size()-1 {
		t.Fatalf("one past the bound: %v", err)
	}
	win, _, _ := strings.Cut(res.Text, "\n")
	if n := next(res); n != int64(len(win)) || !strings.HasPrefix(canonical, win) || !strings.Contains(res.Text, fmt.Sprintf("json_canonical with offset=%d", n)) {
		t.Fatalf("one past the bound: next %d, window %d bytes", n, len(win))
	}
	// Small windows, followed, give the canonical text back exactly.
	var got strings.Builder
	for _, res := range testkit.Windows(t, session(1024), "json_canonical", args, "offset", "next_offset") {
		win, _, _ := strings.Cut(res.Text, "\n")
		got.WriteString(win)
	}
	if got.String() != canonical {
		t.Fatalf("windows reassemble %d bytes, want %d", got.Len(), len(canonical))
	}
	// A bound the counts alone fill fails with limit and says how to raise
	// it; an offset inside a character or past the end is refused.
	if _, err := testkit.Call(t, session(150), "json_canonical", args); fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "[tool.json_canonical] max_output_bytes") {
		t.Fatalf("a bound too small for one character: %v", err)
	}
	for _, off := range []int{strings.Index(canonical, "é") + 1, len(canonical)} {
		if _, err := testkit.Call(t, session(all.Size()), "json_canonical", map[string]any{"path": "d.json", "offset": off}); fault.CodeOf(err) != fault.InvalidInput {
			t.Fatalf("offset %d: %v", off, err)
		}
	}
}

// TestCanonicalWindowBounds: json_canonical at small output bounds
// (testkit.WindowBounds).
func TestCanonicalWindowBounds(t *testing.T) {
	var doc strings.Builder
	doc.WriteString("[")
	for i := range 40 {
		fmt.Fprintf(&doc, `"wörd %s", `, strings.Repeat("é", i%9))
	}
	doc.WriteString(`1]`)
	files := testkit.Files{"d.json": []byte(doc.String())}
	session := func(max int64) *kernel.Session {
		rt := testkit.RuntimeBound(t, RegisterTools, &ToolOptions{Files: files}, max)
		return testkit.Session(t, rt, testkit.Grant(t, []string{"/srv"}, capability.Parse, capability.ReadFile))
	}
	testkit.WindowBounds(t, session, "json_canonical", map[string]any{"path": "d.json"}, "offset", "next_offset")
}
