package semindex

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

func TestTools(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	rt := testkit.Runtime(t, RegisterTools, &ToolOptions{Model: tiny(t)})
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.IndexRead, capability.IndexWrite))
	ro := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.IndexRead))
	cases := []struct {
		name, tool, args string
		code             fault.Code
	}{
		{"search before any add", "semindex_search", `{"index":"s.db","query":"fox"}`, fault.NotFound},
		{"add", "semindex_add", `{"index":"s.db","ref":"fox","text":"The quick brown fox."}`, ""},
		{"add another", "semindex_add", `{"index":"s.db","ref":"cafe","text":"Café crème brûlée.","digest":"v1"}`, ""},
		{"add with a stale expectation", "semindex_add", `{"index":"s.db","ref":"cafe","text":"x","expect_digest":"v0"}`, fault.Conflict},
		{"add outside the root", "semindex_add", `{"index":"` + outside + `/s.db","ref":"a","text":"x"}`, fault.Denied},
		{"scope", "semindex_scope", `{"index":"s.db","name":"only-cafe","refs":["cafe"]}`, ""},
		{"search", "semindex_search", `{"index":"s.db","query":"fox","limit":1}`, ""},
		{"search a scope", "semindex_search", `{"index":"s.db","query":"fox","scope":"only-cafe"}`, ""},
		{"search an unknown scope", "semindex_search", `{"index":"s.db","query":"fox","scope":"nope"}`, fault.NotFound},
		{"status", "semindex_status", `{"index":"s.db","current":{"cafe":"v2"}}`, ""},
		{"audit", "semindex_audit", `{"index":"s.db"}`, ""},
		{"remove", "semindex_remove", `{"index":"s.db","ref":"fox"}`, ""},
		{"remove again", "semindex_remove", `{"index":"s.db","ref":"fox"}`, fault.NotFound},
	}
	var texts = map[string]string{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := testkit.Call(t, s, c.tool, c.args)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if err == nil {
				b, _ := json.Marshal(res)
				texts[c.name] = string(b)
			}
		})
	}
	if !strings.Contains(texts["search a scope"], `cafe`) || strings.Contains(texts["search a scope"], `\"fox\"`) {
		t.Errorf("scoped search: %s", texts["search a scope"])
	}
	if !strings.Contains(texts["status"], "stale") {
		t.Errorf("status: %s", texts["status"])
	}
	_, err := testkit.Call(t, ro, "semindex_add", `{"index":"s.db","ref":"x","text":"x"}`)
	if fault.CodeOf(err) != fault.Denied {
		t.Errorf("add with index_read only: %v", err)
	}
	if _, err := testkit.Call(t, ro, "semindex_search", `{"index":"s.db","query":"fox"}`); err != nil {
		t.Errorf("search with index_read: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "s.db")); !os.IsNotExist(err) {
		t.Error("an index was created outside the root")
	}
}

func TestToolsWithoutModel(t *testing.T) {
	root := t.TempDir()
	for _, opts := range []*ToolOptions{nil, {ModelDir: t.TempDir()}} {
		s := testkit.ToolSession(t, RegisterTools, opts, []string{root}, capability.IndexWrite)
		_, err := testkit.Call(t, s, "semindex_add", `{"index":"s.db","ref":"a","text":"x"}`)
		var fe *fault.Error
		if fault.CodeOf(err) != fault.Unavailable || !strings.Contains(fault.As(err).Message, "sha256sum") {
			t.Errorf("no model: %v, want unavailable saying how to get it", err)
		}
		_ = fe
	}
}

// TestAddByPath: semindex_add indexes the content of a file in a
// read_file root as it indexes text given inline, at the same digest.
func TestAddByPath(t *testing.T) {
	root := t.TempDir()
	docs := testkit.Files{"docs/fox.txt": []byte("The quick brown fox."), "docs/big.txt": []byte(strings.Repeat("a ", limits.SemSourceMaxBytes/2) + "b")}
	session := func(o *ToolOptions, effects ...capability.Effect) *kernel.Session {
		return testkit.ToolSession(t, RegisterTools, o, []string{root}, effects...)
	}
	opts := &ToolOptions{Model: tiny(t), Files: docs}
	s := session(opts, capability.IndexWrite, capability.IndexRead, capability.ReadFile)
	byPath, err := testkit.Call(t, s, "semindex_add", `{"index":"s.db","ref":"a","path":"docs/fox.txt"}`)
	if err != nil {
		t.Fatal(err)
	}
	inline, err := testkit.Call(t, s, "semindex_add", `{"index":"s.db","ref":"b","text":"The quick brown fox."}`)
	if err != nil {
		t.Fatal(err)
	}
	var a, b AddResult
	if json.Unmarshal(byPath.Structured, &a) != nil || json.Unmarshal(inline.Structured, &b) != nil || a.Digest != b.Digest || a.Chunks != b.Chunks || a.Chars != b.Chars {
		t.Fatalf("by path %+v, inline %+v", a, b)
	}
	for _, c := range []struct {
		name, args string
		s          *kernel.Session
		code       fault.Code
	}{
		{"text and path", `{"index":"s.db","ref":"a","text":"x","path":"docs/fox.txt"}`, s, fault.InvalidInput},
		{"neither", `{"index":"s.db","ref":"a"}`, s, fault.InvalidInput},
		{"a file past the source bound", `{"index":"s.db","ref":"a","path":"docs/big.txt"}`, s, fault.Limit},
		{"without read_file", `{"index":"s.db","ref":"a","path":"docs/fox.txt"}`, session(opts, capability.IndexWrite), fault.Denied},
		{"without a reader", `{"index":"s.db","ref":"a","path":"docs/fox.txt"}`, session(&ToolOptions{Model: tiny(t)}, capability.IndexWrite, capability.ReadFile), fault.Denied},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := testkit.Call(t, c.s, "semindex_add", c.args); fault.CodeOf(err) != c.code {
				t.Fatalf("%v, want %q", err, c.code)
			}
		})
	}
}
