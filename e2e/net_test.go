package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTypeScriptClientNetTools drives the net group with the TypeScript
// SDK's client: budget_status in success, net_fetch in each failure a
// model can drive it to without a public server (this machine reaches
// none: a success is the Go suite's, net/fetch's tests against a test
// CA on loopback, which the guard refuses here).
func TestTypeScriptClientNetTools(t *testing.T) {
	modules := nodeModules(t)
	dir := t.TempDir()
	for name, body := range map[string]string{
		"http.json":   `{"format": 1}`,
		"budget.json": `{"format": 1, "group": "g", "window_seconds": 60, "window_requests": 5, "window_bytes": 1000}`,
		"capkit.toml": "[[root]]\npath = \"rw\"\n[actor.assistant]\neffects = [\"net_fetch\", \"budget_read\", \"tool_search\"]\n[net]\nhttp_policy = \"http.json\"\nbudget_policy = \"budget.json\"\nbudget_root = \"budget\"\n",
	} {
		mkfile(t, filepath.Join(dir, name), body)
	}
	if err := os.Mkdir(filepath.Join(dir, "rw"), 0o755); err != nil {
		t.Fatal(err)
	}
	type m = map[string]any
	plan := tsPlan{Transport: "stdio", Command: capkit, Args: []string{"--config", filepath.Join(dir, "capkit.toml"), "serve"}, Cwd: dir}
	plan.Steps = []tsStep{
		{Op: "list"},
		{Op: "call", Tool: "tool_search", Args: m{"query": "fetch url budget", "limit": 12}},
		{Op: "list"},
		{Op: "call", Tool: "budget_status"},
		{Op: "call", Tool: "net_fetch", Args: m{"url": "https://169.254.169.254/latest/meta-data/"}, want: "denied"},
		{Op: "call", Tool: "net_fetch", Args: m{"url": "https://[::1]/"}, want: "denied"},
		{Op: "call", Tool: "net_fetch", Args: m{"url": "ftp://example.com/x"}, want: "denied"},
		{Op: "call", Tool: "net_fetch", Args: m{"url": "https://user:pw@example.com/"}, want: "denied"},
		{Op: "call", Tool: "net_fetch", Args: m{"url": "https://example.com/%zz"}, want: "invalid_input"},
		{Op: "call", Tool: "budget_status"},
	}
	out := runTS(t, modules, plan)
	checkCalls(t, plan.Steps, out)
	listed := map[string]bool{}
	for _, tl := range out.Results[2].Tools {
		listed[tl.Name] = true
	}
	if !listed["net_fetch"] || !listed["budget_status"] {
		t.Errorf("after tool_search: net_fetch %v, budget_status %v", listed["net_fetch"], listed["budget_status"])
	}
	if !strings.Contains(out.Results[3].Text, "window 1: 0/5 requests") || !strings.Contains(out.Results[9].Text, "0/5 requests") {
		t.Errorf("budget_status before and after the refused fetches: %q, %q", out.Results[3].Text, out.Results[9].Text)
	}
}
