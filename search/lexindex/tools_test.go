package lexindex

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

func TestTools(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "x.db"), filepath.Join(root, "link.db")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "w"), filepath.Join(root, "trap.db-wal")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	rt := testkit.Runtime(t, RegisterTools, nil)
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.IndexRead, capability.IndexWrite))
	reader := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.IndexRead))
	cases := []struct {
		name, tool, args string
		code             fault.Code
	}{
		{"search before any index", "lexindex_search", `{"db":"ix.db","query":"a"}`, fault.NotFound},
		{"add", "lexindex_update", `{"db":"ix.db","mutations":[{"ref":"a","text":"alpha beta","digest":"d1"},{"ref":"b","text":"beta gamma"}]}`, ""},
		{"replace with a stale expectation", "lexindex_update", `{"db":"ix.db","mutations":[{"ref":"a","text":"x","expect_digest":"d0"}]}`, fault.Conflict},
		{"scope", "lexindex_scope", `{"db":"ix.db","name":"s","refs":["b"]}`, ""},
		{"search", "lexindex_search", `{"db":"ix.db","query":"beta","scope":"s","snippets":true}`, ""},
		{"malformed fts", "lexindex_search", `{"db":"ix.db","query":"beta AND","mode":"fts"}`, fault.InvalidInput},
		{"status", "lexindex_status", `{"db":"ix.db","refs":[{"ref":"a","current_digest":"d2"}]}`, ""},
		{"remove scope", "lexindex_scope", `{"db":"ix.db","name":"s","remove":true}`, ""},
		{"index outside the root", "lexindex_update", `{"db":"` + outside + `/x.db","mutations":[]}`, fault.Denied},
		{"index through a symlinked directory", "lexindex_update", `{"db":"out/x.db","mutations":[]}`, fault.Denied},
		{"index that is a symlink", "lexindex_update", `{"db":"link.db","mutations":[]}`, fault.Denied},
		{"index whose WAL is a symlink", "lexindex_update", `{"db":"trap.db","mutations":[]}`, fault.Denied},
		{"a directory", "lexindex_search", `{"db":".","query":"a"}`, fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := testkit.Call(t, s, c.tool, c.args)
			if fault.CodeOf(err) != c.code {
				t.Fatalf("%v, want %q", err, c.code)
			}
			if c.name == "search" {
				var r Result
				if err := json.Unmarshal(res.Structured, &r); err != nil || len(r.Hits) != 1 || r.Hits[0].Ref != "b" || r.Hits[0].Snippet == "" {
					t.Fatalf("%s %v", res.Structured, err)
				}
			}
			if c.name == "status" {
				var st Status
				if err := json.Unmarshal(res.Structured, &st); err != nil || len(st.Refs) != 1 || st.Refs[0].Stale == nil || !*st.Refs[0].Stale {
					t.Fatalf("%s %v", res.Structured, err)
				}
			}
		})
	}
	if _, err := testkit.Call(t, reader, "lexindex_update", `{"db":"ix.db","mutations":[{"ref":"c","text":"x"}]}`); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("writing with index_read only: %v", err)
	}
	if _, err := testkit.Call(t, reader, "lexindex_search", `{"db":"ix.db","query":"alpha"}`); err != nil {
		t.Fatalf("reading with index_read: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(outside, "x.db")); !os.IsNotExist(err) {
		t.Fatal("an index was created outside the root")
	}
	if _, err := os.Lstat(filepath.Join(outside, "w")); !os.IsNotExist(err) {
		t.Fatal("a WAL was written through a symlink")
	}
}

// TestUpdateInputBound sends the largest document, every byte escaped as
// JSON's longest escape, and one byte more.
func TestUpdateInputBound(t *testing.T) {
	root := t.TempDir()
	s := testkit.Session(t, testkit.Runtime(t, RegisterTools, nil), testkit.Grant(t, []string{root}, capability.IndexWrite))
	args := func(n int) string {
		return `{"db":"ix.db","mutations":[{"ref":"big","text":"` + strings.Repeat(`\u003c`, n) + `"}]}`
	}
	if len(args(limits.LexMaxDocumentBytes)) > limits.LexToolInputBytes {
		t.Fatal("the input bound does not hold the largest document")
	}
	if _, err := testkit.Call(t, s, "lexindex_update", args(limits.LexMaxDocumentBytes)); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	if _, err := testkit.Call(t, s, "lexindex_update", args(limits.LexMaxDocumentBytes+1)); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one past: %v", err)
	}
}
