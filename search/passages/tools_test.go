package passages

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
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
	s := testkit.Session(t, testkit.Runtime(t, RegisterTools, nil), testkit.Grant(t, []string{root}, capability.Search))
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
	if _, err := testkit.Call(t, testkit.Session(t, testkit.Runtime(t, RegisterTools, nil), testkit.Grant(t, []string{root}, capability.ReadFile)), "passages_find", `{"path":"doc.txt","query":"x"}`); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("without the search effect: %v", err)
	}
}

// TestToolFullPage checks that a full page of matches with their context
// fits the tool's output bound.
func TestToolFullPage(t *testing.T) {
	root := t.TempDir()
	unit := strings.Repeat("日", limits.PassagesContextRunes) + "x"
	if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(strings.Repeat(unit, limits.PassagesMaxMatches+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := testkit.Session(t, testkit.Runtime(t, RegisterTools, nil), testkit.Grant(t, []string{root}, capability.Search))
	res, err := testkit.Call(t, s, "passages_find", `{"path":"big.txt","query":"x","limit":1000}`)
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(res.Structured, &r); err != nil || len(r.Matches) != limits.PassagesMaxMatches || r.Total != limits.PassagesMaxMatches+1 {
		t.Fatalf("%d matches of %d: %v", len(r.Matches), r.Total, err)
	}
}
