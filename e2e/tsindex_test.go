package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTypeScriptClientIndexByPath: a TypeScript SDK client, as Claude
// Desktop runs it, finds the lexical index tools, indexes a file of its
// root by path (as `capkit lexindex add` takes a file) under the
// parameter "index", finds it by a word only the file holds, and is told
// that "db" is not a parameter.
func TestTypeScriptClientIndexByPath(t *testing.T) {
	modules := nodeModules(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mkfile(t, filepath.Join(dir, "rw", "docs", "notes.md"), "# Notes\n\nThe heliotrope budget was approved on Tuesday.\n")
	cfg := filepath.Join(dir, "capkit.toml")
	if err := os.WriteFile(cfg, []byte(`[[root]]
path = "rw"
[actor.assistant]
effects = ["read_file", "index_read", "index_write", "tool_search"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	plan := tsPlan{Transport: "stdio", Command: capkit, Args: []string{"--config", cfg, "serve"}, Cwd: dir, Steps: []tsStep{
		{Op: "call", Tool: "tool_search", Args: map[string]any{"query": "lexindex full-text index update search", "limit": 12}},
		{Op: "list"},
		{Op: "call", Tool: "lexindex_update", Args: map[string]any{"index": "ix.db", "mutations": []any{
			map[string]any{"ref": "notes", "path": "docs/notes.md"},
			map[string]any{"ref": "inline", "text": "nothing about budgets here"},
		}}},
		{Op: "call", Tool: "lexindex_search", Args: map[string]any{"index": "ix.db", "query": "heliotrope", "snippets": true}},
		{Op: "call", Tool: "lexindex_update", Args: map[string]any{"db": "ix.db", "mutations": []any{}}},
	}}
	out := runTS(t, modules, plan)
	listed := map[string]bool{}
	for _, tool := range out.Results[1].Tools {
		listed[tool.Name] = tool.OutputSchema
	}
	if !listed["lexindex_update"] || !listed["lexindex_search"] {
		t.Fatalf("the lexical index tools, with output schemas, are not listed: %v", listed)
	}
	if r := out.Results[2]; r.Thrown != nil || r.IsError || !strings.Contains(r.Text, "2 added") {
		t.Fatalf("lexindex_update by path: %+v", r)
	}
	var hits struct {
		Hits []struct {
			Ref     string `json:"ref"`
			Snippet string `json:"snippet"`
		} `json:"hits"`
	}
	if r := out.Results[3]; r.Thrown != nil || r.IsError || json.Unmarshal(r.Structured, &hits) != nil ||
		len(hits.Hits) != 1 || hits.Hits[0].Ref != "notes" || !strings.Contains(hits.Hits[0].Snippet, "«heliotrope»") {
		t.Fatalf("lexindex_search: %+v", r)
	}
	if r := out.Results[4]; r.Thrown != nil || !r.IsError || !strings.HasPrefix(r.Text, "invalid_input: ") {
		t.Fatalf("the old parameter name: %+v", r)
	}
}
