package passages

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

func TestTool(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write := func(dir, name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(root, "doc.txt", "Page one: Termination.|Page two: termination!")
	write(outside, "secret.txt", "termination")
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	s := testkit.ToolSession(t, RegisterTools, nil, []string{root}, capability.Search)
	cases := []struct {
		name, args string
		code       fault.Code
		total      int64
	}{
		{"exact", `{"path":"doc.txt","query":"termination"}`, "", 1},
		{"folded with regions", `{"path":"doc.txt","query":"TERMINATION","ignore_case":true,"regions":[{"start":22,"end":44},{"start":0,"end":22}]}`, "", 2},
		{"overlapping regions", `{"path":"doc.txt","query":"x","regions":[{"start":0,"end":5},{"start":4,"end":9}]}`, fault.InvalidInput, 0},
		{"limit past its bound", `{"path":"doc.txt","query":"x","limit":1001}`, fault.Limit, 0},
		{"outside the root", `{"path":"` + outside + `/secret.txt","query":"x"}`, fault.Denied, 0},
		{"through a symlink", `{"path":"link.txt","query":"x"}`, fault.Denied, 0},
		{"missing", `{"path":"nope.txt","query":"x"}`, fault.NotFound, 0},
		{"a directory", `{"path":".","query":"x"}`, fault.InvalidInput, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := testkit.Call(t, s, "passages_find", c.args)
			if fault.CodeOf(err) != c.code {
				t.Fatalf("%v, want %q", err, c.code)
			}
			if err != nil {
				return
			}
			var r Result
			if err := json.Unmarshal(res.Structured, &r); err != nil || r.Total != c.total {
				t.Fatalf("%s: %v", res.Structured, err)
			}
			if !strings.Contains(res.Text, "matches") {
				t.Fatalf("text %q", res.Text)
			}
		})
	}
	if _, err := testkit.Call(t, testkit.ToolSession(t, RegisterTools, nil, []string{root}, capability.ReadFile), "passages_find", `{"path":"doc.txt","query":"x"}`); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("without the search effect: %v", err)
	}
}

// TestToolWindowBounds: passages_find at small output bounds
// (testkit.WindowBounds).
func TestToolWindowBounds(t *testing.T) {
	root := t.TempDir()
	var text strings.Builder
	for i := range 40 {
		fmt.Fprintf(&text, "line %d has the word needle %s\n", i, strings.Repeat("ü", i%9))
	}
	if err := os.WriteFile(filepath.Join(root, "doc.txt"), []byte(text.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	session := func(max int64) *kernel.Session {
		return testkit.ToolSessionBound(t, RegisterTools, nil, max, []string{root}, capability.Search)
	}
	testkit.WindowBounds(t, session, "passages_find", map[string]any{"path": "doc.txt", "query": "needle", "limit": 100}, "offset", "next_offset")
}

// TestToolWindows: a full page of matches with their context comes as
// windows that fit the bound; followed, they give every match once.
func TestToolWindows(t *testing.T) {
	root := t.TempDir()
	unit := strings.Repeat("日", limits.PassagesContextRunes) + "x"
	if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(strings.Repeat(unit, limits.PassagesMaxMatches+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	session := func(max int64) *kernel.Session {
		return testkit.ToolSessionBound(t, RegisterTools, nil, max, []string{root}, capability.Search)
	}
	decode := func(res *kernel.Result) FindResult {
		var r FindResult
		if err := json.Unmarshal(res.Structured, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	args := map[string]any{"path": "big.txt", "query": "x", "limit": 30}
	all, err := testkit.Call(t, session(limits.HardMaxOutputBytes), "passages_find", args)
	if err != nil {
		t.Fatal(err)
	}
	// At the bound the 30 matches; one byte less a window and the offset of
	// the next.
	if res, err := testkit.Call(t, session(all.Size()), "passages_find", args); err != nil || len(decode(res).Matches) != 30 || decode(res).NextOffset != 30 {
		t.Fatalf("at the bound: %v", err)
	}
	res, err := testkit.Call(t, session(all.Size()-1), "passages_find", args)
	if r := decode(res); err != nil || len(r.Matches) != 29 || r.NextOffset != 29 || !strings.Contains(res.Text, "passages_find with offset=29") {
		t.Fatalf("one past the bound: %d matches, next %d, %v", len(r.Matches), r.NextOffset, err)
	}
	// Under the default bound, windows of limit 1000 followed to the end
	// give the first 1000 matches once, in order.
	var got []Match
	windows := testkit.Windows(t, session(limits.DefaultMaxOutputBytes), "passages_find", map[string]any{"path": "big.txt", "query": "x", "limit": limits.PassagesMaxMatches}, "offset", "next_offset")
	for _, res := range windows {
		r := decode(res)
		if r.Total != limits.PassagesMaxMatches+1 {
			t.Fatalf("total %d", r.Total)
		}
		got = append(got, r.Matches...)
	}
	whole, err := testkit.Call(t, session(limits.HardMaxOutputBytes), "passages_find", map[string]any{"path": "big.txt", "query": "x", "limit": limits.PassagesMaxMatches})
	if err != nil || len(windows) < 2 || !slices.Equal(got, decode(whole).Matches) || len(got) != limits.PassagesMaxMatches {
		t.Fatalf("%d windows gave %d matches: %v", len(windows), len(got), err)
	}
	// A bound one match does not fit fails with limit and says how to
	// raise it; an offset past the returnable matches is refused.
	if _, err := testkit.Call(t, session(300), "passages_find", args); fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "[tool.passages_find] max_output_bytes") {
		t.Fatalf("a match over the bound: %v", err)
	}
	if _, err := testkit.Call(t, session(all.Size()), "passages_find", map[string]any{"path": "big.txt", "query": "x", "offset": limits.PassagesMaxMatches}); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("offset past the matches: %v", err)
	}
}
