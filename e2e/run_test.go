package e2e

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRunTestOverMCP is the verifier loop over MCP: a model sees run_test
// without discovery, watches a Go test fail, fixes the code with
// edit_file, and proves the fix with run_test; run_shell, not granted, is
// not offered.
func TestRunTestOverMCP(t *testing.T) {
	cfg := failingGoProject(t, "", "")
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

// failingGoProject writes a Go module whose test fails (Sum subtracts) and
// a capkit.toml granting read_file, edit_file, run_test and tool_search
// on it, plus the effects in extraEffects (`, "run_shell"`) and the TOML
// in extraTOML; it returns the configuration's path.
func failingGoProject(t *testing.T, extraEffects, extraTOML string) string {
	t.Helper()
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
effects = ["read_file", "edit_file", "run_test", "tool_search"%s]
[run]
env = { PATH = "%s:/usr/bin:/bin", GOCACHE = %q, GOTOOLCHAIN = "local", GOPROXY = "off" }
writable = [%q]
[test]
command = ["go", "test", "./..."]
args = "-run=[A-Za-z0-9_]+"
%s`, proj, extraEffects, filepath.Dir(goBin), cache, cache, extraTOML)), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestTypeScriptClientRunTools drives the run group with the TypeScript
// SDK's client, which checks every structuredContent against the tool's
// output schema: the verifier loop (run_test fails, edit_file, run_test
// passes), run_build, and run_shell found by tool_search, in success and
// in each failure a model can drive it to (a refused argument, an empty
// command, a deadline, whose failure shows what the command printed, a
// working directory outside every root), plus an output past the bound,
// cut with the bytes it omitted.
func TestTypeScriptClientRunTools(t *testing.T) {
	modules := nodeModules(t)
	cfg := failingGoProject(t, `, "run_shell"`, "[build]\ncommand = [\"go\", \"vet\", \"./...\"]\n")
	plan := tsPlan{Transport: "stdio", Command: capkit, Args: []string{"--config", cfg, "serve"}, Cwd: filepath.Dir(cfg)}
	plan.Steps = []tsStep{
		{Op: "list"},
		{Op: "call", Tool: "run_test"},
		{Op: "call", Tool: "run_test", Args: map[string]any{"args": []string{"-run=TestSum; touch x"}}, want: "denied"},
		{Op: "call", Tool: "tool_search", Args: map[string]any{"query": "run shell command"}},
		{Op: "list"},
		{Op: "call", Tool: "run_build"},
		{Op: "call", Tool: "read_file", Args: map[string]any{"path": "sum.go"}},
		{Op: "call", Tool: "edit_file", Args: map[string]any{"path": "sum.go", "old_string": "return a - b", "new_string": "return a + b"}},
		{Op: "call", Tool: "run_test", Args: map[string]any{"args": []string{"-run=TestSum"}}},
		{Op: "call", Tool: "run_shell", Args: map[string]any{"command": "echo hello; exit 3"}},
		{Op: "call", Tool: "run_shell", Args: map[string]any{"command": "head -c 200000 /dev/zero | tr '\\0' a"}},
		{Op: "call", Tool: "run_shell", Args: map[string]any{"command": ""}, want: "invalid_input"},
		{Op: "call", Tool: "run_shell", Args: map[string]any{"command": "echo printed-before-timeout; sleep 60", "timeout_seconds": 3}, want: "limit"},
		{Op: "call", Tool: "run_shell", Args: map[string]any{"command": "true", "cwd": "/"}, want: "denied"},
		// The project has no capkit.toml and no .git: its top is open.
		{Op: "call", Tool: "run_shell", Args: map[string]any{"command": "touch new.txt"}},
		// A runner that writes to /tmp, not $TMPDIR (the root is in the
		// host's temporary directory when that is /tmp).
		{Op: "call", Tool: "run_shell", Args: map[string]any{"command": `touch /tmp/capkit-ts-probe && [ "$TMPDIR" = /tmp ] && echo tmp-writable`}},
	}
	out := runTS(t, modules, plan)
	checkCalls(t, plan.Steps, out)
	hot := map[string]bool{}
	for _, tl := range out.Results[0].Tools {
		hot[tl.Name] = true
	}
	listed := map[string]bool{}
	for _, tl := range out.Results[4].Tools {
		listed[tl.Name] = true
	}
	if !hot["run_test"] || hot["run_shell"] || !listed["run_shell"] || !listed["run_build"] {
		t.Errorf("run_test hot %v, run_shell hot %v; after tool_search run_shell %v, run_build %v",
			hot["run_test"], hot["run_shell"], listed["run_shell"], listed["run_build"])
	}
	proj := filepath.Join(filepath.Dir(cfg), "proj")
	var closed struct{ Closed []string }
	if err := json.Unmarshal(out.Results[14].Structured, &closed); err != nil || len(closed.Closed) > 0 {
		t.Errorf("the top of the root was closed: %v, structured %s", err, out.Results[14].Structured)
	}
	if _, err := os.Stat(filepath.Join(proj, "new.txt")); err != nil {
		t.Errorf("new.txt at the top of the root: %v", err)
	}
	if tmp := out.Results[15].Text; !strings.Contains(tmp, "containment: reduced") && !strings.Contains(tmp, "tmp-writable") {
		t.Errorf("the command's /tmp (root %s): %s", proj, tmp)
	}
	// What the command printed before its deadline is in the failure:
	// after the fault's line in the text, and in _meta's report.
	timedOut := out.Results[12]
	report, _ := timedOut.Meta["capkit/fault"].(map[string]any)
	if detail, _ := report["detail"].(string); detail != "--- stdout ---\nprinted-before-timeout\n" ||
		!strings.HasSuffix(timedOut.Text, "\n"+detail) || strings.Contains(report["message"].(string), "printed-before") {
		t.Errorf("the timed-out command's output: text %q, report %v", timedOut.Text, report)
	}
	for i, want := range map[int][]string{
		14: {"exit code 0"},
		1:  {"exit code 1", "Sum(2, 3) = -1, want 5"},
		5:  {"exit code 0"},
		8:  {"exit code 0", "ok  \texample.com/sum"},
		9:  {"exit code 3", "hello"},
		10: {"exit code 0", "bytes omitted"},
	} {
		for _, w := range want {
			if !strings.Contains(out.Results[i].Text, w) {
				t.Errorf("step %d %s: text lacks %q:\n%.600s", i, plan.Steps[i].Tool, w, out.Results[i].Text)
			}
		}
	}
}

// TestRunRootUnderTmp: a root in the host's /tmp (given through a
// symbolic link there, as `--root /tmp/proj` may be) leaves the command
// a writable private /tmp, as a test runner that writes to /tmp rather
// than $TMPDIR needs, through run_shell over MCP and through `capkit
// run`; the root is writable with its .git read-only, and nothing of the
// host's /tmp is shown. /tmp itself is refused as a root, and nothing
// runs.
func TestRunRootUnderTmp(t *testing.T) {
	base, err := os.MkdirTemp("/tmp", "capkit-e2e-tmproot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	proj, link := filepath.Join(base, "proj"), filepath.Join(base, "link")
	mkfile(t, filepath.Join(proj, ".git", "config"), "[core]\n\tbare = false\n")
	mklink(t, proj, link)
	cfg := filepath.Join(base, "capkit.toml")
	mkfile(t, cfg, "[[root]]\npath = \"link\"\n[actor.assistant]\neffects = [\"read_file\", \"run_shell\", \"tool_search\"]\n")
	probe := "capkit-e2e-probe-" + rand.Text()
	command := fmt.Sprintf(`touch /tmp/%[1]s && echo tmp-writable; [ "$TMPDIR" = /tmp ] && echo tmpdir-is-tmp
echo x > made-$1.txt && echo root-writable; echo x >> .git/config 2>/dev/null || echo git-refused
echo "tmp: $(ls -A /tmp | tr '\n' ' ')"`, probe)
	// What the command made, HOME, and the directories leading to its
	// roots: the project, and the tool cache (which TestMain puts in the
	// host's temporary directory).
	wantTmp := []string{filepath.Base(base), "home", probe}
	if rest, ok := strings.CutPrefix(os.Getenv("XDG_CACHE_HOME"), "/tmp/"); ok {
		top, _, _ := strings.Cut(rest, "/")
		wantTmp = append(wantTmp, top)
	}
	slices.Sort(wantTmp)
	check := func(how, out string, via string) {
		t.Helper()
		for _, w := range []string{"tmp-writable\n", "tmpdir-is-tmp\n", "root-writable\n", "git-refused\n"} {
			if !strings.Contains(out, w) {
				t.Errorf("%s: no %q in\n%s", how, w, out)
			}
		}
		_, tmp, _ := strings.Cut(out, "tmp: ")
		tmp, _, _ = strings.Cut(tmp, "\n")
		got := strings.Fields(tmp)
		slices.Sort(got)
		if !slices.Equal(got, wantTmp) {
			t.Errorf("%s: /tmp in the container holds %q, want %q", how, got, wantTmp)
		}
		if _, err := os.Stat(filepath.Join(proj, "made-"+via+".txt")); err != nil {
			t.Errorf("%s: the file made in the root: %v", how, err)
		}
	}
	c := stdioClient(t, "--config", cfg)
	text, code := c.call(t, "run_shell", map[string]any{"command": "set -- mcp\n" + command})
	want(t, "run_shell", code, "")
	if strings.Contains(text, "containment: reduced") {
		t.Skip("reduced containment here: the command's /tmp is not a private one")
	}
	check("run_shell", text, "mcp")

	cmd := exec.Command(capkit, "run", "--root", link, "--", "/bin/sh", "-c", command, "sh", "cli")
	cmd.Dir = proj
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(base, "xdg"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("capkit run: %v\n%s", err, out)
	}
	check("capkit run", string(out), "cli")
	if _, err := os.Lstat(filepath.Join("/tmp", probe)); err == nil {
		t.Errorf("the command's /tmp/%s is in the host's /tmp", probe)
	}
	if b, err := os.ReadFile(filepath.Join(proj, ".git", "config")); err != nil || string(b) != "[core]\n\tbare = false\n" {
		t.Errorf(".git/config: %q (%v)", b, err)
	}

	cmd = exec.Command(capkit, "run", "--root", "/tmp", "--", "/bin/sh", "-c", "touch "+filepath.Join(proj, "ran"))
	cmd.Dir = proj
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(base, "xdg"))
	stderr, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(stderr), "capkit: invalid_input: ") || !strings.Contains(string(stderr), "/tmp") {
		t.Errorf("a root of /tmp: exit %d, %s", cmd.ProcessState.ExitCode(), stderr)
	}
	if _, err := os.Lstat(filepath.Join(proj, "ran")); err == nil {
		t.Errorf("the command over /tmp ran")
	}
}
