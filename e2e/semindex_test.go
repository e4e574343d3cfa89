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

// TestSemindexOverMCP is a model's semantic index session over stdio: the
// tools found by tool_search, a source added, a ranked span found, the
// status and the audit, and a path outside the root refused.
func TestSemindexOverMCP(t *testing.T) {
	dir := t.TempDir()
	rw := filepath.Join(dir, "rw")
	if err := os.Mkdir(rw, 0o755); err != nil {
		t.Fatal(err)
	}
	model, err := filepath.Abs("../search/semindex/bert/testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "capkit.toml")
	doc := fmt.Sprintf(`[[root]]
path = %q
[actor.assistant]
effects = ["index_read", "index_write", "tool_search"]
[semindex]
model = %q
pin = %q
`, rw, model, semPin)
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
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
