package semindex

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

func TestSearchAndStatusWindows(t *testing.T) {
	root := t.TempDir()
	opts := &ToolOptions{Model: tiny(t)}
	session := func(max int64) *kernel.Session {
		rt := testkit.RuntimeBound(t, RegisterTools, opts, max)
		return testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.IndexRead, capability.IndexWrite))
	}
	big := session(limits.HardMaxOutputBytes)
	for i := range 60 {
		args := map[string]any{"index": "s.db", "ref": fmt.Sprintf("ref-%02d-%s", i, strings.Repeat("r", i%20)), "text": fmt.Sprintf("The quick brown fox %d jumps.", i)}
		if _, err := testkit.Call(t, big, "semindex_add", args); err != nil {
			t.Fatal(err)
		}
	}
	type window struct {
		Hits       []Hit       `json:"hits"`
		Entries    []RefStatus `json:"entries"`
		NextOffset int         `json:"next_offset"`
	}
	decode := func(res *kernel.Result) window {
		var w window
		if err := json.Unmarshal(res.Structured, &w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	for _, c := range []struct {
		tool  string
		args  map[string]any
		items func(window) int
	}{
		{"semindex_search", map[string]any{"index": "s.db", "query": "fox", "limit": 60, "with_text": true}, func(w window) int { return len(w.Hits) }},
		{"semindex_status", map[string]any{"index": "s.db"}, func(w window) int { return len(w.Entries) }},
	} {
		all, err := testkit.Call(t, big, c.tool, c.args)
		if err != nil || c.items(decode(all)) != 60 {
			t.Fatalf("%s: %v", c.tool, err)
		}
		// At the bound every item; one byte less a window and the offset
		// of the next; windows followed give every item once, in order.
		if res, err := testkit.Call(t, session(all.Size()), c.tool, c.args); err != nil || decode(res).NextOffset != 0 || c.items(decode(res)) != 60 {
			t.Fatalf("%s at the bound: %v", c.tool, err)
		}
		res, err := testkit.Call(t, session(all.Size()-1), c.tool, c.args)
		if w := decode(res); err != nil || c.items(w) != 59 || w.NextOffset != 59 || !strings.Contains(res.Text, c.tool+" with offset=59") {
			t.Fatalf("%s one past the bound: %v", c.tool, err)
		}
		var got window
		for _, res := range testkit.Windows(t, session(2048), c.tool, c.args, "offset", "next_offset") {
			w := decode(res)
			got.Hits, got.Entries = append(got.Hits, w.Hits...), append(got.Entries, w.Entries...)
		}
		whole := decode(all)
		if !slices.Equal(got.Hits, whole.Hits) || !slices.EqualFunc(got.Entries, whole.Entries, func(a, b RefStatus) bool { return a.Ref == b.Ref && a.Digest == b.Digest }) {
			t.Fatalf("%s: windows gave %d items", c.tool, c.items(got))
		}
		if _, err := testkit.Call(t, session(300), c.tool, c.args); fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "[tool."+c.tool+"] max_output_bytes") {
			t.Fatalf("%s: an item over the bound: %v", c.tool, err)
		}
	}
}

// TestWindowBounds: semindex_search, semindex_status and semindex_audit
// at small output bounds (testkit.WindowBounds).
func TestWindowBounds(t *testing.T) {
	root := t.TempDir()
	opts := &ToolOptions{Model: tiny(t)}
	session := func(max int64) *kernel.Session {
		rt := testkit.RuntimeBound(t, RegisterTools, opts, max)
		return testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.IndexRead, capability.IndexWrite))
	}
	for i := range 20 {
		args := map[string]any{"index": "s.db", "ref": fmt.Sprintf("ref-%02d-%s", i, strings.Repeat("r", i%7)), "text": fmt.Sprintf("The quick brown fox %d jumps.", i)}
		if _, err := testkit.Call(t, session(limits.HardMaxOutputBytes), "semindex_add", args); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WindowBounds(t, session, "semindex_search", map[string]any{"index": "s.db", "query": "fox", "limit": 30, "with_text": true}, "offset", "next_offset")
	testkit.WindowBounds(t, session, "semindex_status", map[string]any{"index": "s.db"}, "offset", "next_offset")
	// Every source changed under the index: twenty problems to window.
	ix, err := OpenIn(context.Background(), []string{root}, "s.db", &OpenOptions{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ix.db.ExecContext(context.Background(), `UPDATE sources SET text = 'changed'`)
	ix.Close()
	if err != nil {
		t.Fatal(err)
	}
	testkit.WindowBounds(t, session, "semindex_audit", map[string]any{"index": "s.db"}, "offset", "next_offset")
}
