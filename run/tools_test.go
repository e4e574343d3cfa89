package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/policy"
	"github.com/capkit/capkit/files/tools"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/run/sandbox"
)

func helper(t testing.TB) []string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, sandbox.HelperArg}
}

func runtimeWith(t *testing.T, cfg Config) *kernel.Runtime {
	return testkit.Runtime(t, func(b *kernel.Builder, o *ToolOptions) error {
		if err := tools.RegisterTools(b, &tools.ToolOptions{Events: policy.NewEvents()}); err != nil {
			return err
		}
		return RegisterTools(b, o)
	}, &ToolOptions{Config: cfg, Helper: helper(t)})
}

func decode(t *testing.T, res *kernel.Result) RunResult {
	t.Helper()
	var r RunResult
	if err := json.Unmarshal(res.Structured, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRunShell(t *testing.T) {
	root := t.TempDir()
	rt := runtimeWith(t, Config{})
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
	res, err := testkit.Call(t, s, "run_shell", map[string]any{"command": "echo out; echo err >&2; pwd; exit 4", "stdin": "x"})
	if err != nil {
		t.Fatal(err)
	}
	r := decode(t, res)
	if r.ExitCode != 4 || r.Containment != "full" || r.Dir != root {
		t.Errorf("%+v", r)
	}
	if r.Cgroup.Path != "" || len(r.Cgroup.Applied)+len(r.Cgroup.Missing) == 0 {
		t.Errorf("the result does not say which cgroup limits applied, or names the group's host path: %+v", r.Cgroup)
	}
	want := "exit code 4 after "
	if !strings.HasPrefix(res.Text, want) || !strings.Contains(res.Text, "--- stdout ---\nout\n"+root+"\n--- stderr ---\nerr\n") {
		t.Errorf("text:\n%s", res.Text)
	}
}

// TestRunShellWarm: with the next container built ahead, each call still
// runs its own command with its own input, in the roots of its session.
func TestRunShellWarm(t *testing.T) {
	roots := []string{t.TempDir(), t.TempDir()}
	warm := sandbox.NewWarm()
	t.Cleanup(warm.Close)
	rt := testkit.Runtime(t, RegisterTools, &ToolOptions{Helper: helper(t), Warm: warm})
	for i, root := range []string{roots[0], roots[0], roots[1], roots[1]} {
		s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
		stdin := fmt.Sprintf("call %d", i)
		res, err := testkit.Call(t, s, "run_shell", map[string]any{"command": "cat; echo; pwd", "stdin": stdin})
		if err != nil {
			t.Fatal(err)
		}
		if r := decode(t, res); r.ExitCode != 0 || !strings.Contains(res.Text, "--- stdout ---\n"+stdin+"\n"+root+"\n") {
			t.Errorf("call %d: %+v\n%s", i, r, res.Text)
		}
	}
}

// TestBinaryOutput: output that is not UTF-8, at its bound on both
// streams, still fits the tool's output bound.
func TestBinaryOutput(t *testing.T) {
	root := t.TempDir()
	rt := runtimeWith(t, Config{})
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
	res, err := testkit.Call(t, s, "run_shell", map[string]any{"command": "head -c 100000 /dev/urandom; head -c 100000 /dev/urandom >&2"})
	if err != nil {
		t.Fatal(err)
	}
	if r := decode(t, res); r.StdoutBytes != 100000 || r.StderrBytes != 100000 || r.Omitted < 200000-2*limits.RunDefaultOutputBytes {
		t.Errorf("%+v", r)
	}
}

func TestRunShellFailures(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	rt := runtimeWith(t, Config{Timeout: 3 * time.Second})
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
	for _, tc := range []struct {
		name   string
		args   map[string]any
		code   fault.Code
		policy string // what decided a denial or a limit, as the audit names it
	}{
		{"empty", map[string]any{"command": ""}, fault.InvalidInput, ""},
		{"cwd outside", map[string]any{"command": "true", "cwd": other}, fault.Denied, "roots"},
		{"cwd climbing out", map[string]any{"command": "true", "cwd": "../.."}, fault.Denied, "roots"},
		{"timeout past the host's", map[string]any{"command": "true", "timeout_seconds": 4}, fault.Limit, "run.timeout=3s"},
		{"over its deadline", map[string]any{"command": "sleep 30", "timeout_seconds": 1}, fault.Limit, "run.timeout=1s"},
		{"command too long", map[string]any{"command": strings.Repeat("x", limits.RunMaxCommandBytes+1)}, fault.Limit, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := testkit.Call(t, s, "run_shell", tc.args)
			if fault.CodeOf(err) != tc.code || fault.As(err).Policy != tc.policy {
				t.Errorf("err = %v (policy %q), want %s (policy %q)", err, fault.As(err).Policy, tc.code, tc.policy)
			}
		})
	}
	// The kernel refuses a session without the effect.
	s2 := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunTest))
	if _, err := testkit.Call(t, s2, "run_shell", map[string]any{"command": "true"}); !errors.Is(err, fault.ErrDenied) {
		t.Errorf("without run_shell: %v", err)
	}
}

// TestRunShellCwd: run_shell's cwd goes through the file tools' resolver:
// relative to the first root or absolute inside one, a directory reached
// without leaving its root; anything else is refused before a container
// is built, with the code a file tool would give.
func TestRunShellCwd(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{"sub/deep", "sub ", ".capkit-tmp-x"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "file.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"out": outside, "in": "sub"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	rt := runtimeWith(t, Config{})
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
	for _, tc := range []struct {
		cwd, dir string // dir: where the command ran
		code     fault.Code
	}{
		{"", root, ""},
		{".", root, ""},
		{"sub/deep", filepath.Join(root, "sub", "deep"), ""},
		{"./sub/../sub/deep", filepath.Join(root, "sub", "deep"), ""},
		{filepath.Join(root, "sub"), filepath.Join(root, "sub"), ""},
		{"in/deep", filepath.Join(root, "in", "deep"), ""},
		{"sub ", "", fault.InvalidInput},
		{"~", "", fault.InvalidInput},
		{".capkit-tmp-x", "", fault.InvalidInput},
		{"file.txt", "", fault.InvalidInput},
		{"missing", "", fault.NotFound},
		{"out", "", fault.Denied},
		{"in", "", fault.Denied},
		{"..", "", fault.Denied},
		{outside, "", fault.Denied},
		{root + "_sibling", "", fault.Denied},
	} {
		res, err := testkit.Call(t, s, "run_shell", map[string]any{"command": "pwd", "cwd": tc.cwd})
		if fault.CodeOf(err) != tc.code {
			t.Errorf("cwd %q: %v, want %q", tc.cwd, err, tc.code)
			continue
		}
		if err == nil {
			if r := decode(t, res); r.Dir != tc.dir || r.ExitCode != 0 {
				t.Errorf("cwd %q: ran in %q (%+v), want %q", tc.cwd, r.Dir, r, tc.dir)
			}
		}
	}
}

func TestRequiredContainment(t *testing.T) {
	root := t.TempDir()
	rt := runtimeWith(t, Config{Reduced: true, RequireFull: true})
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
	_, err := testkit.Call(t, s, "run_shell", map[string]any{"command": "touch ran"})
	if !errors.Is(err, fault.ErrUnavailable) {
		t.Fatalf("err = %v, want unavailable", err)
	}
	if _, err := os.Stat(filepath.Join(root, "ran")); err == nil {
		t.Error("the command ran")
	}
}

func TestReducedContainmentReported(t *testing.T) {
	root := t.TempDir()
	rt := runtimeWith(t, Config{Reduced: true})
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
	res, err := testkit.Call(t, s, "run_shell", map[string]any{"command": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if r := decode(t, res); r.Containment != "reduced" || len(r.Notes) == 0 || !strings.Contains(res.Text, "(reduced containment)") {
		t.Errorf("%+v\n%s", r, res.Text)
	}
}

func TestDeclaredCommands(t *testing.T) {
	root := t.TempDir()
	pattern, err := AnchoredPattern(`-run=[A-Za-z0-9_]+`)
	if err != nil {
		t.Fatal(err)
	}
	rt := runtimeWith(t, Config{Test: map[string]Command{
		"":      {Argv: []string{"/bin/echo", "tested"}, Args: pattern},
		"fixed": {Argv: []string{"/bin/sh", "-c", "echo fixed; pwd"}, Dir: "sub"},
	}})
	must(t, os.Mkdir(filepath.Join(root, "sub"), 0o755))
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunTest))
	for _, tc := range []struct {
		name string
		args map[string]any
		code fault.Code
		out  string
	}{
		{"default", map[string]any{}, "", "tested\n"},
		{"allowed argument", map[string]any{"args": []string{"-run=TestX"}}, "", "tested -run=TestX\n"},
		{"argument off the pattern", map[string]any{"args": []string{"-run=X; rm -rf /"}}, fault.Denied, ""},
		{"argument partly matching", map[string]any{"args": []string{"x-run=TestX"}}, fault.Denied, ""},
		{"no arguments allowed", map[string]any{"name": "fixed", "args": []string{"-v"}}, fault.Denied, ""},
		{"declared dir", map[string]any{"name": "fixed"}, "", "fixed\n" + filepath.Join(root, "sub") + "\n"},
		{"undeclared", map[string]any{"name": "bench"}, fault.NotFound, ""},
		{"too many arguments", map[string]any{"args": make([]string, limits.RunMaxArgs+1)}, fault.Limit, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := testkit.Call(t, s, "run_test", tc.args)
			if fault.CodeOf(err) != tc.code {
				t.Fatalf("err = %v, want %q", err, tc.code)
			}
			if err == nil && !strings.Contains(res.Text, "--- stdout ---\n"+tc.out) {
				t.Errorf("text:\n%s", res.Text)
			}
		})
	}
	// run_test is listed without discovery; run_shell is not registered
	// hot, and run_build only when declared.
	var hot, build bool
	for _, e := range s.Specs() {
		hot = hot || e.Name == "run_test" && e.Hot
		build = build || e.Name == "run_build"
	}
	if !hot || build {
		t.Errorf("run_test hot: %v, run_build listed: %v", hot, build)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestFixAFailingGoTest is the coding loop through kernel sessions: a
// failing Go test, proven failing with run_test, fixed with edit_file,
// proven passing with run_test.
func TestFixAFailingGoTest(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no Go toolchain on PATH")
	}
	cache, err := exec.Command(goBin, "env", "GOCACHE").Output()
	must(t, err)
	root := t.TempDir()
	files := map[string]string{
		"go.mod":      "module example.com/sum\n\ngo 1.22\n",
		"sum.go":      "package sum\n\n// Sum adds a and b.\nfunc Sum(a, b int) int { return a - b }\n",
		"sum_test.go": "package sum\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif got := Sum(2, 3); got != 5 {\n\t\tt.Fatalf(\"Sum(2, 3) = %d, want 5\", got)\n\t}\n}\n",
	}
	for name, text := range files {
		must(t, os.WriteFile(filepath.Join(root, name), []byte(text), 0o644))
	}
	rt := runtimeWith(t, Config{
		Env:      []string{"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "GOCACHE=" + strings.TrimSpace(string(cache)), "GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=-mod=mod"},
		Writable: []string{strings.TrimSpace(string(cache))},
		Test:     map[string]Command{"": {Argv: []string{"go", "test", "./..."}, Timeout: 2 * time.Minute}},
	})
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunTest, capability.ReadFile, capability.EditFile))
	res, err := testkit.Call(t, s, "run_test", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if r := decode(t, res); r.ExitCode == 0 || !regexp.MustCompile(`Sum\(2, 3\) = -1, want 5`).MatchString(res.Text) {
		t.Fatalf("the failing test did not fail:\n%s", res.Text)
	}
	if _, err := testkit.Call(t, s, "read_file", map[string]any{"path": "sum.go"}); err != nil {
		t.Fatal(err)
	}
	if _, err := testkit.Call(t, s, "edit_file", map[string]any{"path": "sum.go", "old_string": "return a - b", "new_string": "return a + b"}); err != nil {
		t.Fatal(err)
	}
	res, err = testkit.Call(t, s, "run_test", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if r := decode(t, res); r.ExitCode != 0 || !strings.Contains(res.Text, "ok  \texample.com/sum") {
		t.Fatalf("the fixed test did not pass:\n%s", res.Text)
	}
}

// TestAuditSaysHowContained: the audit event of a contained command names
// its containment and what was weaker.
func TestAuditSaysHowContained(t *testing.T) {
	root := t.TempDir()
	var buf bytes.Buffer
	rt := testkit.Runtime(t, RegisterTools, &ToolOptions{Config: Config{Reduced: true}, Helper: helper(t), Audit: slog.New(slog.NewJSONHandler(&buf, nil))})
	for range 2 {
		s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
		if _, err := testkit.Call(t, s, "run_shell", map[string]any{"command": "exit 2"}); err != nil {
			t.Fatal(err)
		}
	}
	type event struct {
		Msg         string   `json:"msg"`
		Containment string   `json:"containment"`
		Notes       []string `json:"notes"`
		ExitCode    int      `json:"exit_code"`
		Cgroup      struct {
			Path    string   `json:"path"`
			Applied []string `json:"applied"`
			Missing []string `json:"missing"`
		} `json:"cgroup"`
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d events, want 2: %s", len(lines), buf.String())
	}
	var first, second event
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatalf("%v: %s", err, lines[0])
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatalf("%v: %s", err, lines[1])
	}
	for _, ev := range []event{first, second} {
		if ev.Msg != "contained command" || ev.Containment != "reduced" || ev.ExitCode != 2 || len(ev.Cgroup.Missing) != 0 {
			t.Errorf("audit event %+v", ev)
		}
	}
	// memory and pids (no milli_cpus set) each applied or said missing
	// in a note, or no cgroup at all (a note says so too).
	missing := 0
	for _, n := range first.Notes {
		if strings.HasPrefix(n, "cgroup limit not applied: ") {
			missing++
		}
	}
	if c := first.Cgroup; len(first.Notes) == 0 || (c.Path == "" && missing != 1) || (c.Path != "" && len(c.Applied)+missing != 2) {
		t.Errorf("the first event's notes and cgroup: %q %+v", first.Notes, c)
	}
	// The host's notes are said once, not on every call.
	if len(second.Notes) != 0 || len(lines[1]) >= len(lines[0]) && len(first.Notes) > 0 {
		t.Errorf("the second event says the notes again:\n%s\n%s", lines[0], lines[1])
	}
}

// TestSaidNotesBound: a note is said once while fewer than
// limits.RunAuditNotesKept are remembered; past the bound a new note is
// said every time, never left out.
func TestSaidNotesBound(t *testing.T) {
	var s saidNotes
	var notes []string
	for i := range limits.RunAuditNotesKept + 1 {
		notes = append(notes, fmt.Sprintf("note %d", i))
	}
	if got := s.unsaid(notes); len(got) != len(notes) {
		t.Fatalf("first time: %d of %d said", len(got), len(notes))
	}
	if got := s.unsaid(notes); len(got) != 1 || got[0] != notes[limits.RunAuditNotesKept] {
		t.Fatalf("second time: %q, want only the note past the bound", got)
	}
}

// TestConcurrentRunsBounded: limits.RunDefaultConcurrent calls of a tool
// run at once, over every session; the next fails with limit before
// anything of it runs.
func TestConcurrentRunsBounded(t *testing.T) {
	root := t.TempDir()
	// In a subdirectory: the top of a root without capkit.toml is closed
	// to new entries.
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	rt := runtimeWith(t, Config{})
	wait := `mktemp sub/started.XXXXXX >/dev/null; while [ ! -e go ]; do sleep 0.02; done`
	done := make(chan error, limits.RunDefaultConcurrent)
	for range limits.RunDefaultConcurrent {
		s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
		go func() {
			_, err := testkit.Call(t, s, "run_shell", map[string]any{"command": wait})
			done <- err
		}()
	}
	started := func() int {
		m, _ := filepath.Glob(filepath.Join(root, "sub", "started.*"))
		return len(m)
	}
	for deadline := time.Now().Add(2 * time.Minute); started() < limits.RunDefaultConcurrent; {
		select {
		case err := <-done:
			t.Fatalf("a call ended before its command could: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d commands started", started(), limits.RunDefaultConcurrent)
		}
	}
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
	_, err := testkit.Call(t, s, "run_shell", map[string]any{"command": "touch sub/started.extra"})
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "[tool.run_shell] max_concurrent") {
		t.Errorf("call past the bound: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for range limits.RunDefaultConcurrent {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	if n := started(); n != limits.RunDefaultConcurrent {
		t.Errorf("%d commands ran, want %d", n, limits.RunDefaultConcurrent)
	}
	if _, err := testkit.Call(t, s, "run_shell", map[string]any{"command": "true"}); err != nil {
		t.Errorf("a call after the others ended: %v", err)
	}
}

// TestClosedRootExplained: in reduced containment, a command failing at
// the top of a root that an existing .git closes is told why; a command
// that succeeds is not, though the result still lists the closed
// directory.
func TestClosedRootExplained(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	rt := runtimeWith(t, Config{Reduced: true})
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
	note := "note: " + root + " was closed"
	for _, tc := range []struct {
		command string
		noted   bool
	}{
		{"touch new.txt", true},
		{"echo ok", false},
	} {
		res, err := testkit.Call(t, s, "run_shell", map[string]any{"command": tc.command})
		if err != nil {
			t.Fatal(err)
		}
		if r := decode(t, res); !slices.Equal(r.Closed, []string{root}) || strings.Contains(res.Text, note) != tc.noted {
			t.Errorf("%s: closed %q, text:\n%s", tc.command, r.Closed, res.Text)
		}
	}
}

// TestPlantedProtectedPathDenied: a command that creates a protected path
// that was missing fails with denied, naming the path and where it went;
// the root keeps everything else, and the next command runs as usual.
func TestPlantedProtectedPathDenied(t *testing.T) {
	root, q := t.TempDir(), t.TempDir()
	rt := runtimeWith(t, Config{Quarantine: q})
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
	_, err := testkit.Call(t, s, "run_shell", map[string]any{"command": "git init -q . && echo x > capkit.toml && echo kept > kept.txt"})
	git, toml := filepath.Join(root, ".git"), filepath.Join(root, "capkit.toml")
	if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), git+" -> "+q+"/") || !strings.Contains(err.Error(), toml+" -> "+q+"/") ||
		!strings.Contains(err.Error(), "exited with code 0") {
		t.Fatalf("err = %v", err)
	}
	for _, p := range []string{git, toml} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is in the root", p)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "kept.txt")); err != nil || string(b) != "kept\n" {
		t.Errorf("kept.txt: %q %v", b, err)
	}
	if res, err := testkit.Call(t, s, "run_shell", map[string]any{"command": "ls"}); err != nil || !strings.Contains(res.Text, "kept.txt") {
		t.Errorf("the next command: %v", err)
	}
}

// TestRootInsideProtectedPathReadOnly: a session whose root is a
// protected path of the configured root (a client root narrowed to .git)
// runs commands with that root read-only, so no hook can be planted.
func TestRootInsideProtectedPathReadOnly(t *testing.T) {
	root := t.TempDir()
	git := filepath.Join(root, ".git")
	if err := os.MkdirAll(filepath.Join(git, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	rt := runtimeWith(t, Config{Protected: capability.NewProtected().WithRoots(root)})
	s := testkit.Session(t, rt, testkit.Grant(t, []string{git}, capability.RunShell))
	res, err := testkit.Call(t, s, "run_shell", map[string]any{"command": "echo evil > hooks/pre-commit; mkdir new"})
	if err != nil {
		t.Fatal(err)
	}
	if r := decode(t, res); r.ExitCode == 0 || r.Dir != git {
		t.Errorf("the command could write in the root .git: %+v\n%s", r, res.Text)
	}
	for _, p := range []string{"hooks/pre-commit", "new"} {
		if _, err := os.Lstat(filepath.Join(git, p)); err == nil {
			t.Errorf(".git/%s was made", p)
		}
	}
}

// TestFailureShowsOutput: a command that printed and then ran past its
// time limit, or planted a protected path, fails with what it printed as
// the failure's detail, which the caller sees; neither the kernel's audit
// event of the call nor the contained command's holds any of it.
func TestFailureShowsOutput(t *testing.T) {
	root, q := t.TempDir(), t.TempDir()
	var audited testkit.Buffer
	log := slog.New(slog.NewJSONHandler(&audited, nil))
	b := kernel.NewBuilder(&kernel.Options{Audit: log})
	if err := RegisterTools(b, &ToolOptions{Config: Config{Timeout: 10 * time.Second, Quarantine: q}, Helper: helper(t), Audit: log}); err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
	for _, c := range []struct {
		name, command string
		code          fault.Code
		policy, want  string
	}{
		{"past its time limit", "echo printed-before-timeout; echo warned-before-timeout >&2; sleep 30", fault.Limit, "run.timeout=3s",
			"--- stdout ---\nprinted-before-timeout\n--- stderr ---\nwarned-before-timeout\n"},
		{"a planted protected path", "echo printed-before-planting; git init -q .", fault.Denied, "protected",
			"--- stdout ---\nprinted-before-planting\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// 3 s: the container is built within the time bound, and the
			// echo must run before it passes, on a loaded machine too.
			_, err := testkit.Call(t, s, "run_shell", map[string]any{"command": c.command, "timeout_seconds": 3})
			fe := fault.As(err)
			if fe.Code != c.code || fe.Policy != c.policy || fe.Detail != c.want {
				t.Fatalf("err = %v, policy %q, detail %q", err, fe.Policy, fe.Detail)
			}
			if strings.Contains(err.Error(), "printed-before") {
				t.Fatalf("the output is in Error(), which logs take: %v", err)
			}
		})
	}
	events := audited.String()
	if n := strings.Count(events, `"msg":"call"`); n != 2 || strings.Count(events, `"msg":"contained command"`) != 2 {
		t.Fatalf("%d call events:\n%s", n, events)
	}
	for _, p := range []string{`"policy":"run.timeout=3s"`, `"policy":"protected"`} {
		if !strings.Contains(events, p) {
			t.Errorf("no call event holds %s:\n%s", p, events)
		}
	}
	for _, w := range []string{"printed-before", "warned-before"} {
		if strings.Contains(events, w) {
			t.Fatalf("the audit trail holds the command's output %q:\n%s", w, events)
		}
	}
}
