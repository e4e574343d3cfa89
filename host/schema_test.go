package host

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/capkit/capkit/archive/textarchive"
)

// Schemas are resolved when a tool is first listed or called, not when the
// host is built; this holds every tool this build registers (every group
// configured) to schemas that resolve, so a broken one fails here rather
// than on a model's first call.
func TestEveryToolSchemaResolves(t *testing.T) {
	h := everyTool(t, "")
	cat := h.Runtime.Catalog()
	if err := cat.Check(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"read_file", "notes", "run_script", "net_fetch", "budget_status", "run_shell", "run_test", "run_build", "semindex_search", "archive_add", "archive_fetch", "tool_search"} {
		if _, _, ok := cat.Lookup(name); !ok {
			t.Errorf("%s is not registered: the test does not cover it", name)
		}
	}
	t.Logf("%d tools, every schema resolves", cat.Len())
}

// everyTool is a host with every group configured, so that every tool
// this build has is registered; actors are more of its configuration.
func everyTool(t *testing.T, actors string) *Host {
	t.Helper()
	dir := fixture(t)
	for name, body := range map[string]string{
		"http.json":   `{"format": 1}`,
		"budget.json": `{"format": 1, "group": "g", "window_seconds": 60, "window_requests": 5, "window_bytes": 1000}`,
		"source.json": `{"format": 1, "group": "sources", "hosts": ["example.org"], "retention": "text_only"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := textarchive.Init(context.Background(), filepath.Join(dir, "archive")); err != nil {
		t.Fatal(err)
	}
	h, err := New(load(t, dir, base+`
[catalog.notes.entries]
a = "rw/a.txt"
[script]
enabled = true
[net]
http_policy = "http.json"
budget_policy = "budget.json"
budget_root = "budget"
[test]
command = ["true"]
[build]
command = ["true"]
[semindex]
model = "models/minilm"
[archive]
root = "archive"
source_policy = "source.json"
budget_root = "archive-budget"
`+actors), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}
