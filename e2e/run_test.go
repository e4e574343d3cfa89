package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunTestOverMCP is the verifier loop over MCP: a model sees run_test
// without discovery, watches a Go test fail, fixes the code with
// edit_file, and proves the fix with run_test; run_shell, not granted, is
// not offered.
func TestRunTestOverMCP(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no Go toolchain on PATH")
	}
	out, err := exec.Command(goBin, "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	cache := strings.TrimSpace(string(out))
	dir := tree(t)
	proj := filepath.Join(dir, "proj")
	files := map[string]string{
		"go.mod":      "module example.com/sum\n\ngo 1.22\n",
		"sum.go":      "package sum\n\n// Sum adds a and b.\nfunc Sum(a, b int) int { return a - b }\n",
		"sum_test.go": "package sum\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif got := Sum(2, 3); got != 5 {\n\t\tt.Fatalf(\"Sum(2, 3) = %d, want 5\", got)\n\t}\n}\n",
	}
	for name, text := range files {
		p := filepath.Join(proj, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "capkit.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`[[root]]
path = %q
[actor.assistant]
effects = ["read_file", "edit_file", "run_test", "tool_search"]
[run]
env = { PATH = "%s:/usr/bin:/bin", GOCACHE = %q, GOTOOLCHAIN = "local", GOPROXY = "off" }
cache = [%q]
[test]
command = ["go", "test", "./..."]
args = "-run=[A-Za-z0-9_]+"
`, proj, filepath.Dir(goBin), cache, cache)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := stdioClient(t, "--config", cfg)
	tools := c.tools(t)
	if tools["run_test"] == nil || tools["run_shell"] != nil {
		t.Fatalf("run_test listed: %v, run_shell listed: %v", tools["run_test"] != nil, tools["run_shell"] != nil)
	}
	text, code := c.call(t, "run_test", map[string]any{})
	want(t, "run_test", code, "")
	if !strings.HasPrefix(text, "exit code 1") || !strings.Contains(text, "Sum(2, 3) = -1, want 5") {
		t.Fatalf("the failing test did not fail:\n%s", text)
	}
	_, code = c.call(t, "run_test", map[string]any{"args": []string{"-run=TestSum; touch x"}})
	want(t, "run_test with a refused argument", code, "denied")
	_, code = c.call(t, "read_file", map[string]any{"path": "sum.go"})
	want(t, "read_file", code, "")
	_, code = c.call(t, "edit_file", map[string]any{"path": "sum.go", "old_string": "return a - b", "new_string": "return a + b"})
	want(t, "edit_file", code, "")
	text, code = c.call(t, "run_test", map[string]any{"args": []string{"-run=TestSum"}})
	want(t, "run_test", code, "")
	if !strings.HasPrefix(text, "exit code 0") || !strings.Contains(text, "ok  \texample.com/sum") {
		t.Fatalf("the fixed test did not pass:\n%s", text)
	}
}
