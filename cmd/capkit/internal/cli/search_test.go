package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/limits"
)

func TestPassagesCommands(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	mustNil(t, os.WriteFile(p("doc.txt"), []byte("Page one: Termination.|Page two: termination!"), 0o600))
	mustNil(t, os.WriteFile(p("regions.json"), []byte(`[{"start": 22, "end": 44}, {"start": 0, "end": 22}]`), 0o600))
	mustNil(t, os.WriteFile(p("overlap.json"), []byte(`[{"start": 0, "end": 23}, {"start": 22, "end": 44}]`), 0o600))
	mustNil(t, os.WriteFile(p("bad.txt"), []byte("a\xffb"), 0o600))
	// Sparse regions files at the bound and one past it.
	for name, size := range map[string]int64{"edge.json": limits.PassagesMaxRegionsBytes, "past.json": limits.PassagesMaxRegionsBytes + 1} {
		mustNil(t, os.WriteFile(p(name), nil, 0o600))
		mustNil(t, os.Truncate(p(name), size))
	}
	runCases(t, []cmdCase{
		{name: "exact", args: []string{"passages", "find", p("doc.txt"), "--query", "termination"}, out: "1 matches (exact)"},
		{name: "json", args: []string{"passages", "find", p("doc.txt"), "--query", "termination", "--ignore-case", "--regions", p("regions.json"), "--json"}, out: `"total": 2`},
		{name: "regions named", args: []string{"passages", "find", p("doc.txt"), "--query", "Termination", "--regions", p("regions.json"), "--json"}, out: `"region": 1`},
		{name: "overlapping regions", args: []string{"passages", "find", p("doc.txt"), "--query", "x", "--regions", p("overlap.json")}, code: 2, err: "overlap"},
		{name: "regions file at its bound", args: []string{"passages", "find", p("doc.txt"), "--query", "x", "--regions", p("edge.json")}, code: 2, err: "regions file: want a JSON array"},
		{name: "regions file past its bound", args: []string{"passages", "find", p("doc.txt"), "--query", "x", "--regions", p("past.json")}, code: 6},
		{name: "limit past its bound", args: []string{"passages", "find", p("doc.txt"), "--query", "x", "--limit", "1001"}, code: 6},
		{name: "not UTF-8", args: []string{"passages", "find", p("bad.txt"), "--query", "a"}, code: 2, err: "offset 1"},
		{name: "missing source", args: []string{"passages", "find", p("none.txt"), "--query", "a"}, code: 3},
		{name: "empty query", args: []string{"passages", "find", p("doc.txt"), "--query", ""}, code: 2},
	})
}

func TestLexindexCommands(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	db := p("ix.db")
	mustNil(t, os.WriteFile(p("a.txt"), []byte("alpha beta gamma"), 0o600))
	mustNil(t, os.WriteFile(p("b.txt"), []byte("beta delta"), 0o600))
	mustNil(t, os.WriteFile(p("big.txt"), []byte(strings.Repeat("x", limits.LexMaxDocumentBytes+1)), 0o600))
	runCases(t, []cmdCase{
		{name: "search a missing index", args: []string{"lexindex", "search", db, "beta"}, code: 3},
		{name: "add", args: []string{"lexindex", "add", db, "a", p("a.txt"), "--digest", "d1"}, out: "1 added"},
		{name: "add another", args: []string{"lexindex", "add", db, "b", p("b.txt")}, out: "1 added"},
		{name: "replace with a stale expectation", args: []string{"lexindex", "add", db, "a", p("b.txt"), "--expect-digest", "d0"}, code: 4, err: "expected at digest d0"},
		{name: "too big", args: []string{"lexindex", "add", db, "big", p("big.txt")}, code: 6},
		{name: "scope", args: []string{"lexindex", "scope", db, "s", "b"}, out: `holds 1 refs`},
		{name: "search", args: []string{"lexindex", "search", db, "beta", "--json"}, out: `"hits": [`},
		{name: "scoped search", args: []string{"lexindex", "search", db, "beta", "--scope", "s", "--json"}, out: `"ref": "b"`},
		{name: "phrase", args: []string{"lexindex", "search", db, "beta gamma", "--phrase"}, out: "1. a"},
		{name: "malformed fts", args: []string{"lexindex", "search", db, "beta OR", "--fts"}, code: 2, err: "at character 8"},
		{name: "phrase and fts", args: []string{"lexindex", "search", db, "beta", "--phrase", "--fts"}, code: 2},
		{name: "status", args: []string{"lexindex", "status", db, "a", "zzz", "--current", "a=d2"}, out: "a: indexed at d1 (16 bytes), stale"},
		{name: "list", args: []string{"lexindex", "status", db}, out: "2 documents"},
		{name: "remove", args: []string{"lexindex", "remove", db, "a"}, out: "1 removed"},
		{name: "remove again", args: []string{"lexindex", "remove", db, "a"}, code: 3},
		{name: "remove scope", args: []string{"lexindex", "scope", db, "s", "--remove"}, out: "removed"},
	})
}

// TestLexindexScoresReadApart: bm25 over a few documents gives scores
// near 0.000002; the text shows them with the digits that tell the ranks
// apart, never as 0.0000.
func TestLexindexScoresReadApart(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	db := p("docs.db")
	for name, text := range map[string]string{"a": "revenue growth in the north\n", "b": "revenue fell; growth later; growth again\n", "c": "nothing here\n"} {
		mustNil(t, os.WriteFile(p(name), []byte(text), 0o600))
		if code, _, errOut := run(t, "", "lexindex", "add", db, name, p(name)); code != 0 {
			t.Fatal(errOut)
		}
	}
	code, out, errOut := run(t, "", "lexindex", "search", db, "revenue growth")
	if code != 0 {
		t.Fatal(errOut)
	}
	var scores []string
	for _, line := range strings.Split(out, "\n") {
		if _, rest, ok := strings.Cut(line, "(score "); ok {
			scores = append(scores, rest[:strings.Index(rest, ",")])
		}
	}
	if len(scores) != 2 || scores[0] == scores[1] || strings.Trim(scores[0], "0.") == "" || strings.Trim(scores[1], "0.") == "" {
		t.Fatalf("scores %q in %q", scores, out)
	}
}
