package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
)

func TestRunCommand(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"passes output and exit code through", []string{"--", "sh", "-c", "echo out; echo err >&2; exit 3"}, 3, "out\n", "err\n"},
		{"success", []string{"--", "true"}, 0, "", ""},
		{"past the timeout", []string{"--timeout", "1s", "--", "sleep", "30"}, 6, "", "capkit: limit: the command ran past its time limit of 1s"},
		// What a failed command wrote is shown before the failure.
		// 5 s: under load a container can take more than a second to
		// start, and then the command has written nothing yet.
		{"output past the timeout", []string{"--timeout", "5s", "--", "sh", "-c", "echo started; echo waiting >&2; sleep 30"}, 6, "started\n", "waiting\ncapkit: limit: the command ran past its time limit of 5s"},
		{"bad timeout", []string{"--timeout", "11m", "--", "true"}, 2, "", "capkit: invalid_input: --timeout"},
		{"missing root", []string{"--root", filepath.Join(root, "missing"), "--", "true"}, 2, "", "does not exist"},
		// The root has no capkit.toml and no .git: its top stays open,
		// and a protected path made there is moved out, and denied.
		{"the top of the root is open", []string{"--", "sh", "-c", "touch new && ls"}, 0, "new\n", ""},
		{"a protected path made", []string{"--", "sh", "-c", "echo made; echo x > capkit.toml"}, 5, "made\n",
			"capkit: denied: the command (which exited with code 0) created protected paths, which the host's git and capkit would read or run; they were moved out of the root into the quarantine: " +
				filepath.Join(root, "capkit.toml") + " -> " + filepath.Join(state, "capkit", "quarantine") + "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run"}, tc.args...)
			if !strings.HasPrefix(tc.args[0], "--root") {
				args = append([]string{"run", "--root", root}, tc.args...)
			}
			code, stdout, stderr := run(t, "", args...)
			if code != tc.code || stdout != tc.stdout || !strings.HasPrefix(stderr, tc.stderr) && !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
	// A read-only root is shown but cannot be written.
	ro := t.TempDir()
	code, _, stderr := run(t, "", "run", "--root", root, "--read-only", ro, "--", "sh", "-c", "touch "+ro+"/x")
	if _, err := os.Stat(filepath.Join(ro, "x")); code == 0 || err == nil {
		t.Errorf("wrote into the read-only root: exit %d, %s", code, stderr)
	}
}

// TestRunToolCache: `capkit run` keeps the Go build cache of a root
// between runs, in capkit's own cache directory: the second `go build`
// of the same module compiles nothing.
func TestRunToolCache(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no Go toolchain on PATH")
	}
	root := t.TempDir()
	mustNil(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/lib\n\ngo 1.22\n"), 0o644))
	mustNil(t, os.WriteFile(filepath.Join(root, "lib.go"), []byte("package lib\n\n// F is in "+root+".\nfunc F() int { return 1 }\n"), 0o644))
	build := func() string {
		code, _, stderr := run(t, "", "run", "--root", root, "--", "go", "build", "-x", ".")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		return stderr
	}
	if first := build(); !strings.Contains(first, "/compile ") || !strings.Contains(first, filepath.Join(os.Getenv("XDG_CACHE_HOME"), "capkit", "run-cache")) {
		t.Fatalf("the first build did not compile into capkit's cache:\n%s", first)
	}
	if second := build(); strings.Contains(second, "/compile ") {
		t.Errorf("the second build compiled again:\n%s", second)
	}
}

func TestTestCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "capkit.toml")
	mustNil(t, os.WriteFile(cfg, []byte(`[[root]]
path = "."
[test]
command = ["sh", "-c", "echo testing \"$@\"; exit 1", "sh"]
args = "-v|-run=[A-Za-z]+"
[test.variant.quick]
command = ["echo", "quick"]
[build]
command = ["echo", "built"]
`), 0o644))
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"default fails", nil, 1, "testing\n", ""},
		{"allowed argument", []string{"--", "-run=Parse"}, 1, "testing -run=Parse\n", ""},
		{"argument off the pattern", []string{"--", "-run=x;rm"}, 5, "", "capkit: denied: extra argument"},
		{"variant", []string{"quick"}, 0, "quick\n", ""},
		{"undeclared variant", []string{"slow"}, 3, "", "capkit: not_found: no test command \"slow\""},
		{"build", []string{"--build"}, 0, "built\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "", append([]string{"test", "--config", cfg}, tc.args...)...)
			if code != tc.code || stdout != tc.stdout || !strings.HasPrefix(stderr, tc.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
	if code, _, stderr := run(t, "", "test"); code != 2 || !strings.Contains(stderr, "--config") {
		t.Errorf("without --config: exit %d, %s", code, stderr)
	}
}

// TestConfigDiscovery: given neither --config nor --root, tools, call,
// script run and test use ./capkit.toml and say so; serve uses only the
// configuration it is given and says how.
func TestConfigDiscovery(t *testing.T) {
	dir := t.TempDir()
	mustNil(t, os.WriteFile(filepath.Join(dir, "capkit.toml"), []byte(`[[root]]
path = "."
[test]
command = ["echo", "tested"]
`), 0o644))
	mustNil(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("n\n"), 0o644))
	mustNil(t, os.WriteFile(filepath.Join(dir, "s.star"), []byte(`result = tool.call("read_file", "notes.txt")["total_lines"]`), 0o644))
	mustNil(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	t.Chdir(dir)
	const note = "capkit: using ./capkit.toml (no --config given)\n"
	runCases(t, []cmdCase{
		{name: "tools", args: []string{"tools"}, out: "read_file", err: note},
		{name: "call", args: []string{"call", "list_dir"}, out: "notes.txt", err: note},
		{name: "script run", args: []string{"script", "run", "s.star"}, out: "1", err: note},
		{name: "test", args: []string{"test"}, out: "tested", err: note},
		{name: "serve does not discover", args: []string{"serve"}, code: 2, err: "give --config capkit.toml"},
	})
	if code, out, errOut := run(t, "", "call", "list_dir", "--root", "sub"); code != 0 || strings.Contains(errOut, "using") || strings.Contains(out, "notes.txt") {
		t.Errorf("--root given: exit %d, %q, %q", code, out, errOut)
	}
	t.Chdir(filepath.Join(dir, "sub"))
	if code, _, errOut := run(t, "", "tools"); code != 2 || strings.Contains(errOut, "using") {
		t.Errorf("no capkit.toml here: exit %d, %q", code, errOut)
	}
}

// TestRunWithConfig: capkit run --config applies the configuration's
// roots and [run] settings as serve does (its env here), runs in the
// working directory when that lies in a root, and refuses --root beside
// it. Before, --config was ignored and the command ran over "." with no
// [run] at all.
func TestRunWithConfig(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "proj", "sub")
	mustNil(t, os.MkdirAll(sub, 0o755))
	cfg := filepath.Join(dir, "capkit.toml")
	mustNil(t, os.WriteFile(cfg, []byte("[[root]]\npath = \"proj\"\n[run]\nenv = { MARK = \"from the configuration\" }\n"), 0o644))
	code, stdout, stderr := run(t, "", "--config", cfg, "run", "--", "sh", "-c", `echo "$MARK"; pwd`)
	if code != 0 || stdout != "from the configuration\n"+filepath.Join(dir, "proj")+"\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	t.Chdir(sub)
	if code, stdout, stderr := run(t, "", "--config", cfg, "run", "--", "pwd"); code != 0 || stdout != sub+"\n" {
		t.Errorf("from %s: exit %d, stdout %q, stderr %q", sub, code, stdout, stderr)
	}
	if code, _, stderr := run(t, "", "--config", cfg, "run", "--root", dir, "--", "true"); code != 2 || !strings.Contains(stderr, "either --config or --root") {
		t.Errorf("--config and --root: exit %d, %q", code, stderr)
	}
}

// TestCallFailureShowsOutput: capkit call of a contained tool that printed
// and then ran past its deadline shows what it printed after the fault's
// line, and in the --json failure object's detail.
func TestCallFailureShowsOutput(t *testing.T) {
	dir := t.TempDir()
	mustNil(t, os.MkdirAll(filepath.Join(dir, "proj"), 0o755))
	cfg := filepath.Join(dir, "capkit.toml")
	mustNil(t, os.WriteFile(cfg, []byte("[[root]]\npath = \"proj\"\n[actor.dev]\neffects = [\"run_shell\"]\n"), 0o644))
	args := `{"command": "echo printed-before-timeout; sleep 30", "timeout_seconds": 3}`
	code, stdout, stderr := run(t, "", "call", "run_shell", args, "--config", cfg, "--actor", "dev")
	if code != 6 || stdout != "" || !strings.HasPrefix(stderr, "capkit: limit: the command ran past its time limit") ||
		!strings.HasSuffix(stderr, ")\n--- stdout ---\nprinted-before-timeout\n") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, _ = run(t, "", "call", "run_shell", args, "--config", cfg, "--actor", "dev", "--json")
	var got struct{ Error fault.Report }
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 6 || got.Error.Detail != "--- stdout ---\nprinted-before-timeout\n" {
		t.Fatalf("exit %d, %v: %q", code, err, stdout)
	}
}
