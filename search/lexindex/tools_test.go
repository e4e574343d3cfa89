package lexindex

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
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
		{"search before any index", "lexindex_search", `{"index":"ix.db","query":"a"}`, fault.NotFound},
		{"add", "lexindex_update", `{"index":"ix.db","mutations":[{"ref":"a","text":"alpha beta","digest":"d1"},{"ref":"b","text":"beta gamma"}]}`, ""},
		{"replace with a stale expectation", "lexindex_update", `{"index":"ix.db","mutations":[{"ref":"a","text":"x","expect_digest":"d0"}]}`, fault.Conflict},
		{"scope", "lexindex_scope", `{"index":"ix.db","name":"s","refs":["b"]}`, ""},
		{"search", "lexindex_search", `{"index":"ix.db","query":"beta","scope":"s","snippets":true}`, ""},
		{"malformed fts", "lexindex_search", `{"index":"ix.db","query":"beta AND","mode":"fts"}`, fault.InvalidInput},
		{"status", "lexindex_status", `{"index":"ix.db","refs":[{"ref":"a","current_digest":"d2"}]}`, ""},
		{"remove scope", "lexindex_scope", `{"index":"ix.db","name":"s","remove":true}`, ""},
		{"index outside the root", "lexindex_update", `{"index":"` + outside + `/x.db","mutations":[]}`, fault.Denied},
		{"index through a symlinked directory", "lexindex_update", `{"index":"out/x.db","mutations":[]}`, fault.Denied},
		{"index that is a symlink", "lexindex_update", `{"index":"link.db","mutations":[]}`, fault.Denied},
		{"index whose WAL is a symlink", "lexindex_update", `{"index":"trap.db","mutations":[]}`, fault.Denied},
		{"a directory", "lexindex_search", `{"index":".","query":"a"}`, fault.InvalidInput},
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
	if _, err := testkit.Call(t, reader, "lexindex_update", `{"index":"ix.db","mutations":[{"ref":"c","text":"x"}]}`); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("writing with index_read only: %v", err)
	}
	if _, err := testkit.Call(t, reader, "lexindex_search", `{"index":"ix.db","query":"alpha"}`); err != nil {
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
	s := testkit.ToolSession(t, RegisterTools, nil, []string{root}, capability.IndexWrite)
	args := func(n int) string {
		return `{"index":"ix.db","mutations":[{"ref":"big","text":"` + strings.Repeat(`\u003c`, n) + `"}]}`
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

// TestUpdateByPath: a put may name a file in a read_file root instead of
// giving its text, as `capkit lexindex add` does; the index parameter is
// "index", as the semantic index tools name it, and "db" is refused.
func TestUpdateByPath(t *testing.T) {
	root := t.TempDir()
	big := []byte(strings.Repeat("w ", limits.LexMaxDocumentBytes/2))
	docs := testkit.Files{"docs/a.md": []byte("alpha report"), "docs/big.txt": big}
	for i := range 7 {
		docs[fmt.Sprintf("docs/big%d.txt", i)] = big
	}
	session := func(o *ToolOptions, effects ...capability.Effect) *kernel.Session {
		return testkit.ToolSession(t, RegisterTools, o, []string{root}, effects...)
	}
	opts := &ToolOptions{Files: docs}
	s := session(opts, capability.IndexWrite, capability.IndexRead, capability.ReadFile)
	res, err := testkit.Call(t, s, "lexindex_update", `{"index":"ix.db","mutations":[{"ref":"a","path":"docs/a.md"},{"ref":"b","text":"beta"}]}`)
	if err != nil || !strings.Contains(res.Text, "2 added") {
		t.Fatalf("%v %v", res, err)
	}
	res, err = testkit.Call(t, s, "lexindex_search", `{"index":"ix.db","query":"alpha"}`)
	var r Result
	if err != nil || json.Unmarshal(res.Structured, &r) != nil || len(r.Hits) != 1 || r.Hits[0].Ref != "a" || r.Hits[0].Digest != fmt.Sprintf("%x", sha256.Sum256(docs["docs/a.md"])) {
		t.Fatalf("%v %v", res, err)
	}
	var six []string
	for i := range 6 {
		six = append(six, fmt.Sprintf(`{"ref":"b%d","path":"docs/big%d.txt"}`, i, i))
	}
	for _, c := range []struct {
		name, args string
		s          *kernel.Session
		code       fault.Code
		msg        string
	}{
		{"text and path", `{"index":"ix.db","mutations":[{"ref":"a","text":"x","path":"docs/a.md"}]}`, s, fault.InvalidInput, "not both"},
		{"a removal with a path", `{"index":"ix.db","mutations":[{"ref":"a","remove":true,"path":"docs/a.md"}]}`, s, fault.InvalidInput, "takes no path"},
		{"a missing file", `{"index":"ix.db","mutations":[{"ref":"a","path":"docs/none.md"}]}`, s, fault.NotFound, ""},
		{"without read_file", `{"index":"ix.db","mutations":[{"ref":"a","path":"docs/a.md"}]}`, session(opts, capability.IndexWrite), fault.Denied, ""},
		{"without a reader", `{"index":"ix.db","mutations":[{"ref":"a","path":"docs/a.md"}]}`, session(nil, capability.IndexWrite, capability.ReadFile), fault.Denied, ""},
		{"the old name", `{"db":"ix.db","mutations":[]}`, s, fault.InvalidInput, ""},
		{"a batch past the bound reads", `{"index":"ix.db","mutations":[` + strings.Join(six, ",") + `,{"ref":"x","path":"docs/a.md"}]}`, s, fault.Limit, "split the batch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := testkit.Call(t, c.s, "lexindex_update", c.args)
			if fault.CodeOf(err) != c.code || c.msg != "" && !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("%v, want %q %q", err, c.code, c.msg)
			}
		})
	}
	if res, err := testkit.Call(t, s, "lexindex_status", `{"index":"ix.db","refs":[{"ref":"x"}]}`); err != nil || strings.Contains(res.Text, "x: indexed") {
		t.Fatalf("a batch refused for its bound changed the index: %v %v", res, err)
	}
	// The bound on what a batch reads, at its edge (indexing 48 MiB would
	// make a slow test): six largest documents are read, one byte more
	// is not.
	var muts []MutationArg
	for i := range 6 {
		muts = append(muts, MutationArg{Mutation: Mutation{Ref: fmt.Sprint(i)}, Path: fmt.Sprintf("docs/big%d.txt", i)})
	}
	call := &kernel.Call{Session: s}
	if got, err := readMutations(context.Background(), call, docs, muts); err != nil || len(got) != 6 || len(got[5].Text) != limits.LexMaxDocumentBytes {
		t.Fatalf("at the bound: %v", err)
	}
	muts = append(muts, MutationArg{Mutation: Mutation{Ref: "x"}, Path: "docs/a.md"})
	if _, err := readMutations(context.Background(), call, docs, muts); fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "split the batch") {
		t.Fatalf("one byte past the bound: %v", err)
	}
}
