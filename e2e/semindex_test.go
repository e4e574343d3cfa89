package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tiny random BERT fixture of search/semindex/bert/testdata.
const semPin = "776bd478161ed9031ef3ec1a88b1ea13118c2582f02631d2ec81cfcf8e578be8"

// indexWorld is a folder with a root rw and a capkit.toml granting the
// index effects on it, with the tiny BERT fixture as the semantic
// index's model: the folder and the configuration's path.
func indexWorld(t *testing.T) (dir, cfg string) {
	t.Helper()
	dir = t.TempDir()
	rw := filepath.Join(dir, "rw")
	if err := os.Mkdir(rw, 0o755); err != nil {
		t.Fatal(err)
	}
	model, err := filepath.Abs("../search/semindex/bert/testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(dir, "capkit.toml")
	doc := fmt.Sprintf("[[root]]\npath = %q\n[actor.assistant]\neffects = [\"index_read\", \"index_write\", \"tool_search\"]\n[semindex]\nmodel = %q\npin = %q\n", rw, model, semPin)
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, cfg
}

// TestSemindexOverMCP is a model's semantic index session over stdio: the
// tools found by tool_search, a source added, a ranked span found, the
// status and the audit, and a path outside the root refused.
func TestSemindexOverMCP(t *testing.T) {
	dir, cfg := indexWorld(t)
	cmd := exec.Command(capkit, "serve", "--config", cfg)
	cmd.Stderr = &testWriter{t: t}
	c := connect(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second})

	out, code := c.call(t, "tool_search", map[string]any{"query": "semantic index search meaning", "limit": 12})
	want(t, "tool_search", code, "")
	if !strings.Contains(out, "semindex_search") {
		t.Fatalf("tool_search did not offer semindex_search: %s", out)
	}
	_, code = c.call(t, "semindex_add", map[string]any{"index": "sem.db", "ref": "fox", "text": "The quick brown fox jumps over the lazy dog."})
	want(t, "add", code, "")
	_, code = c.call(t, "semindex_add", map[string]any{"index": "sem.db", "ref": "cafe", "text": "Café crème brûlée."})
	want(t, "add", code, "")
	out, code = c.call(t, "semindex_search", map[string]any{"index": "sem.db", "query": "Café crème brûlée.", "limit": 1})
	want(t, "search", code, "")
	if !strings.Contains(out, "cafe [0,18)") || !strings.Contains(out, "2 chunks scored") {
		t.Fatalf("search: %s", out)
	}
	out, code = c.call(t, "semindex_status", map[string]any{"index": "sem.db"})
	want(t, "status", code, "")
	if !strings.Contains(out, "2 refs") || !strings.Contains(out, "audit") {
		t.Fatalf("status: %s", out)
	}
	out, code = c.call(t, "semindex_audit", map[string]any{"index": "sem.db"})
	want(t, "audit", code, "")
	if !strings.Contains(out, "audit ok") {
		t.Fatalf("audit: %s", out)
	}
	_, code = c.call(t, "semindex_add", map[string]any{"index": filepath.Join(dir, "elsewhere.db"), "ref": "x", "text": "x"})
	want(t, "add outside the root", code, "denied")
	if _, err := os.Stat(filepath.Join(dir, "elsewhere.db")); !os.IsNotExist(err) {
		t.Fatal("an index was created outside the root")
	}
}

// TestTypeScriptClientIndexes drives the index group with the TypeScript
// SDK's client (every structuredContent checked against its tool's output
// schema): every lexindex and semindex tool found by tool_search, each in
// success and in a failure a model can drive it to.
func TestTypeScriptClientIndexes(t *testing.T) {
	modules := nodeModules(t)
	dir, cfg := indexWorld(t)
	outside := filepath.Join(dir, "elsewhere.db")
	type m = map[string]any
	steps := []tsStep{
		{Op: "list"},
		{Op: "call", Tool: "tool_search", Args: m{"query": "lexindex index", "limit": 12}},
		{Op: "call", Tool: "tool_search", Args: m{"query": "semindex semantic index", "limit": 12}},
		{Op: "list"},
	}
	calls := []tsStep{
		{Tool: "lexindex_update", Args: m{"index": "lex.db", "mutations": []m{{"ref": "a", "text": "the quick brown fox"}, {"ref": "b", "text": "a lazy dog"}}}},
		{Tool: "lexindex_update", Args: m{"index": "lex.db", "mutations": []m{{"ref": "a", "text": "x", "expect_digest": "not-the-digest"}}}, want: "conflict"},
		{Tool: "lexindex_scope", Args: m{"index": "lex.db", "name": "animals", "refs": []string{"a", "b"}}},
		{Tool: "lexindex_scope", Args: m{"index": outside, "name": "s"}, want: "denied"},
		{Tool: "lexindex_search", Args: m{"index": "lex.db", "query": "fox", "snippets": true}},
		{Tool: "lexindex_search", Args: m{"index": "lex.db", "query": "fox AND (", "mode": "fts"}, want: "invalid_input"},
		{Tool: "lexindex_status", Args: m{"index": "lex.db"}},
		{Tool: "lexindex_status", Args: m{"index": "missing.db"}, want: "not_found"},
		{Tool: "semindex_add", Args: m{"index": "sem.db", "ref": "fox", "text": "The quick brown fox jumps over the lazy dog."}},
		{Tool: "semindex_add", Args: m{"index": outside, "ref": "x", "text": "x"}, want: "denied"},
		{Tool: "semindex_scope", Args: m{"index": "sem.db", "name": "animals", "refs": []string{"fox"}}},
		{Tool: "semindex_scope", Args: m{"index": outside, "name": "s", "refs": []string{"x"}}, want: "denied"},
		{Tool: "semindex_search", Args: m{"index": "sem.db", "query": "a fox", "limit": 1, "with_text": true}},
		{Tool: "semindex_search", Args: m{"index": "sem.db", "query": "a fox", "scope": "no-such-scope"}, want: "not_found"},
		{Tool: "semindex_status", Args: m{"index": "sem.db", "current": m{"fox": "stale-digest"}}},
		{Tool: "semindex_status", Args: m{"index": "missing.db"}, want: "not_found"},
		{Tool: "semindex_audit", Args: m{"index": "sem.db"}},
		{Tool: "semindex_audit", Args: m{"index": "missing.db"}, want: "not_found"},
		{Tool: "semindex_remove", Args: m{"index": "sem.db", "ref": "fox", "expect_digest": "not-the-digest"}, want: "conflict"},
		{Tool: "semindex_remove", Args: m{"index": "sem.db", "ref": "fox"}},
	}
	called := map[string]bool{}
	for _, c := range calls {
		c.Op = "call"
		steps = append(steps, c)
		called[c.Tool] = true
	}
	plan := tsPlan{Transport: "stdio", Command: capkit, Args: []string{"--config", cfg, "serve"}, Cwd: dir, Steps: steps}
	out := runTS(t, modules, plan)
	checkCalls(t, plan.Steps, out)
	for _, tl := range out.Results[3].Tools {
		if tl.Name != "tool_search" && !called[tl.Name] {
			t.Errorf("%s is listed but the test never calls it", tl.Name)
		}
		delete(called, tl.Name)
	}
	if len(called) != 0 {
		t.Errorf("called but not listed after tool_search: %v", called)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Error("an index was created outside the root")
	}
}
