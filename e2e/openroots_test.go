package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The builds a coding agent's verifier runs, at the top of a root that
// has no capkit.toml (a git repository, or a directory that is neither),
// through `capkit run`, run_shell over MCP with Go's client and with the
// TypeScript SDK's: each leaves exactly what the same command run bare
// leaves. And the commands that plant what the host's git and capkit
// read: each fails with denied, the root ends without what it planted,
// and the quarantine holds it.

// buildProject is the project every build runs in.
var buildProject = map[string]string{
	"go.mod":       "module example.com/app\n\ngo 1.22\n",
	"main.go":      "package main\n\nfunc main() { println(\"app\") }\n",
	"Makefile":     "build/out: main.go\n\tmkdir -p build\n\tcp main.go build/out\n",
	"run-tests.sh": "mkdir -p .testcache\nfor t in tests/*.sh; do sh \"$t\" > \".testcache/$(basename \"$t\").out\" || exit 1; done\n",
	"tests/a.sh":   "echo a passed\n",
}

// builds are the commands; {gocache} is the Go build cache (the host's,
// warm, shown writable).
var builds = []struct{ name, command string }{
	{"file and directory", "echo hi > out.txt && mkdir logs && echo l > logs/a.log"},
	{"make", "make -s"},
	{"test runner cache", "sh run-tests.sh"},
	{"go build", "GOCACHE={gocache} go build -buildvcs=false -o bin/app . && ./bin/app"},
}

// plants are the commands that make protected paths; moved lists what
// must be moved out (in a plain directory; in a git repository .git is
// held read-only, so only capkit.toml can be made, and the others fail).
var plants = []struct {
	name, command string
	moved         []string // in a plain directory
	inRepo        []string // in a git repository ("": the command fails instead)
}{
	{"git init", "git init -q .", []string{".git"}, nil},
	{"capkit.toml", "echo '[[root]]' > capkit.toml", []string{"capkit.toml"}, []string{"capkit.toml"}},
	{"pre-commit hook", "mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit", []string{".git"}, nil},
	{"renamed to .git", "mkdir g && echo x > g/HEAD && mv -T g .git", []string{".git"}, nil},
}

// snapshot is a tree: each path's type, mode and content digest (a Go
// binary by its type alone: it holds its build directory).
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." || rel == ".git" && d.IsDir() {
			if rel == ".git" {
				return fs.SkipDir // compared by gitUnchanged
			}
			return nil
		}
		info, _ := d.Info()
		entry := info.Mode().String()
		switch {
		case rel == "bin/app":
		case d.Type().IsRegular():
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			entry += " " + hex.EncodeToString(sum[:8])
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			entry += " -> " + l
		}
		out[rel] = entry
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// project writes the project into dir, a git repository when repo.
func project(t *testing.T, dir string, repo bool) {
	t.Helper()
	for p, s := range buildProject {
		mkfile(t, filepath.Join(dir, p), s)
	}
	if repo {
		if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
	}
}

// bare runs command as a build would without capkit: in dir, with a
// private HOME and TMPDIR.
func bare(t *testing.T, dir, command string) {
	t.Helper()
	tmp := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "TMPDIR=" + tmp, "LANG=C.UTF-8"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s, bare: %v\n%s", command, err, out)
	}
}

// openRootsWorld is one setup's directories: a project per command, the
// bare results, the quarantine, the configuration serving every project
// as a root.
type openRootsWorld struct {
	repo            bool
	dir, gocache    string
	quarantine      string
	config          string
	builds, plants  []string // project directories
	want            []map[string]string
	before          []map[string]string // each planting project, before
	gitBefore       []map[string]string
	buildCommands   []string
	plantCommands   []string
	plantExpectMove [][]string
}

func newOpenRootsWorld(t *testing.T, repo bool) *openRootsWorld {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no Go toolchain on PATH")
	}
	out, err := exec.Command(goBin, "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &openRootsWorld{repo: repo, dir: dir, gocache: strings.TrimSpace(string(out)), quarantine: filepath.Join(dir, "state", "quarantine")}
	var roots strings.Builder
	for i, b := range builds {
		command := strings.ReplaceAll(b.command, "{gocache}", w.gocache)
		ref := filepath.Join(dir, "bare", fmt.Sprint(i))
		project(t, ref, repo)
		bare(t, ref, command)
		p := filepath.Join(dir, "builds", fmt.Sprint(i))
		project(t, p, repo)
		w.builds = append(w.builds, p)
		w.buildCommands = append(w.buildCommands, command)
		w.want = append(w.want, snapshot(t, ref))
		fmt.Fprintf(&roots, "[[root]]\npath = %q\n", p)
	}
	for i, pl := range plants {
		p := filepath.Join(dir, "plants", fmt.Sprint(i))
		project(t, p, repo)
		w.plants = append(w.plants, p)
		w.plantCommands = append(w.plantCommands, pl.command)
		w.before = append(w.before, snapshot(t, p))
		w.gitBefore = append(w.gitBefore, gitTree(t, p))
		moved := pl.moved
		if repo {
			moved = pl.inRepo
		}
		w.plantExpectMove = append(w.plantExpectMove, moved)
		fmt.Fprintf(&roots, "[[root]]\npath = %q\n", p)
	}
	w.config = filepath.Join(dir, "capkit.toml")
	mkfile(t, w.config, fmt.Sprintf(`%s[actor.assistant]
effects = ["read_file", "run_shell", "tool_search"]
[run]
env = { PATH = "%s:/usr/bin:/bin", GOTOOLCHAIN = "local", GOPROXY = "off" }
writable = [%q]
quarantine = %q
`, roots.String(), filepath.Dir(goBin), w.gocache, w.quarantine))
	return w
}

// gitTree is .git's snapshot, nil without one.
func gitTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(dir, ".git")); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return snapshot(t, filepath.Join(dir, ".git"))
}

// checkBuild compares project i with what the bare run left.
func (w *openRootsWorld) checkBuild(t *testing.T, i int, how string) {
	t.Helper()
	got := snapshot(t, w.builds[i])
	if fmt.Sprint(got) != fmt.Sprint(w.want[i]) {
		t.Errorf("%s %s: the root holds\n%v\nwant (the bare run's)\n%v", how, builds[i].name, got, w.want[i])
	}
	if st, err := os.Stat(filepath.Join(w.builds[i], "bin", "app")); builds[i].name == "go build" && (err != nil || st.Mode()&0o100 == 0) {
		t.Errorf("%s: bin/app: %v %v", how, st, err)
	}
}

// checkPlant checks project i after its planting command failed with
// code: denied and every planted path in the quarantine, or (in a git
// repository, where .git is read-only) the command's own failure and
// nothing changed.
func (w *openRootsWorld) checkPlant(t *testing.T, i int, how, code, text string) {
	t.Helper()
	p := w.plants[i]
	moved := w.plantExpectMove[i]
	if len(moved) == 0 {
		if code != "" {
			t.Errorf("%s %s: fault %q, want the command's own failure: %s", how, plants[i].name, code, text)
		}
	} else if code != "denied" {
		t.Errorf("%s %s: fault %q, want denied: %s", how, plants[i].name, code, text)
	}
	for _, m := range moved {
		if !strings.Contains(text, filepath.Join(p, m)+" -> "+w.quarantine+"/") {
			t.Errorf("%s %s: the failure does not say where %s went: %s", how, plants[i].name, m, text)
		}
		if _, err := os.Lstat(filepath.Join(p, m)); err == nil {
			t.Errorf("%s %s: %s is still in the root", how, plants[i].name, m)
		}
	}
	got := snapshot(t, p)
	delete(got, "g") // what a failed rename left
	delete(got, "g/HEAD")
	if fmt.Sprint(got) != fmt.Sprint(w.before[i]) {
		t.Errorf("%s %s: the root holds\n%v\nwant\n%v", how, plants[i].name, got, w.before[i])
	}
	if g := gitTree(t, p); fmt.Sprint(g) != fmt.Sprint(w.gitBefore[i]) {
		t.Errorf("%s %s: .git changed: %v", how, plants[i].name, g)
	}
}

// quarantined lists the entries the quarantine holds (each run's
// directory's entries), and empties it for the next client.
func (w *openRootsWorld) quarantined(t *testing.T) []string {
	t.Helper()
	runs, _ := os.ReadDir(w.quarantine)
	var out []string
	for _, r := range runs {
		entries, _ := os.ReadDir(filepath.Join(w.quarantine, r.Name()))
		for _, e := range entries {
			out = append(out, e.Name())
		}
	}
	os.RemoveAll(w.quarantine)
	return out
}

func (w *openRootsWorld) wantQuarantined() int {
	n := 0
	for _, m := range w.plantExpectMove {
		n += len(m)
	}
	return n
}

func setups(t *testing.T, run func(t *testing.T, w *openRootsWorld)) {
	for _, repo := range []bool{true, false} {
		name := "plain directory"
		if repo {
			name = "git repository"
		}
		t.Run(name, func(t *testing.T) { run(t, newOpenRootsWorld(t, repo)) })
	}
}

// TestOpenRootsCLI: through `capkit run`, the real binary.
func TestOpenRootsCLI(t *testing.T) {
	setups(t, func(t *testing.T, w *openRootsWorld) {
		capkitRun := func(dir, command string) (int, string) {
			cmd := exec.Command(capkit, "run", "--root", dir, "--root", w.gocache, "--", "/bin/sh", "-c", command)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(w.dir, "xdg"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			return cmd.ProcessState.ExitCode(), stderr.String()
		}
		for i := range builds {
			if code, stderr := capkitRun(w.builds[i], w.buildCommands[i]); code != 0 {
				t.Errorf("%s: exit %d: %s", builds[i].name, code, stderr)
			}
			w.checkBuild(t, i, "capkit run")
		}
		w.quarantine = filepath.Join(w.dir, "xdg", "capkit", "quarantine")
		for i := range plants {
			code, stderr := capkitRun(w.plants[i], w.plantCommands[i])
			fault := map[int]string{0: "none", 5: "denied"}[code]
			if code != 0 && code != 5 {
				fault = ""
			}
			w.checkPlant(t, i, "capkit run", fault, stderr)
		}
		if got := w.quarantined(t); len(got) != w.wantQuarantined() {
			t.Errorf("the quarantine holds %q, want %d entries", got, w.wantQuarantined())
		}
	})
}

// TestOpenRootsOverMCP: through run_shell, with Go's MCP client.
func TestOpenRootsOverMCP(t *testing.T) {
	setups(t, func(t *testing.T, w *openRootsWorld) {
		c := stdioClient(t, "--config", w.config)
		c.call(t, "tool_search", map[string]any{"query": "run shell command"})
		for i := range builds {
			text, code := c.call(t, "run_shell", map[string]any{"command": w.buildCommands[i], "cwd": w.builds[i]})
			if code != "" || !strings.HasPrefix(text, "exit code 0") {
				t.Errorf("%s: %s %s", builds[i].name, code, text)
			}
			w.checkBuild(t, i, "run_shell")
		}
		for i := range plants {
			text, code := c.call(t, "run_shell", map[string]any{"command": w.plantCommands[i], "cwd": w.plants[i]})
			if code == "" && strings.HasPrefix(text, "exit code 0") {
				code = "none"
			}
			w.checkPlant(t, i, "run_shell", code, text)
		}
		if got := w.quarantined(t); len(got) != w.wantQuarantined() {
			t.Errorf("the quarantine holds %q, want %d entries", got, w.wantQuarantined())
		}
	})
}

// TestOpenRootsTypeScriptClient: through run_shell, with the TypeScript
// SDK's client, which checks every result against the output schema.
func TestOpenRootsTypeScriptClient(t *testing.T) {
	modules := nodeModules(t)
	setups(t, func(t *testing.T, w *openRootsWorld) {
		plan := tsPlan{Transport: "stdio", Command: capkit, Args: []string{"--config", w.config, "serve"}, Cwd: w.dir}
		plan.Steps = []tsStep{{Op: "call", Tool: "tool_search", Args: map[string]any{"query": "run shell command"}}, {Op: "list"}}
		for i := range builds {
			plan.Steps = append(plan.Steps, tsStep{Op: "call", Tool: "run_shell", Args: map[string]any{"command": w.buildCommands[i], "cwd": w.builds[i]}})
		}
		for i := range plants {
			step := tsStep{Op: "call", Tool: "run_shell", Args: map[string]any{"command": w.plantCommands[i], "cwd": w.plants[i]}}
			if len(w.plantExpectMove[i]) > 0 {
				step.want = "denied"
			}
			plan.Steps = append(plan.Steps, step)
		}
		out := runTS(t, modules, plan)
		checkCalls(t, plan.Steps, out)
		for i := range builds {
			if r := out.Results[2+i]; !strings.HasPrefix(r.Text, "exit code 0") {
				t.Errorf("%s: %s", builds[i].name, r.Text)
			}
			w.checkBuild(t, i, "TypeScript client")
		}
		for i := range plants {
			r := out.Results[2+len(builds)+i]
			code := "none"
			if f, ok := r.Meta["capkit/fault"].(map[string]any); ok {
				code, _ = f["code"].(string)
			} else if !strings.HasPrefix(r.Text, "exit code 0") {
				code = ""
			}
			w.checkPlant(t, i, "TypeScript client", code, r.Text)
		}
		if got := w.quarantined(t); len(got) != w.wantQuarantined() {
			t.Errorf("the quarantine holds %q, want %d entries", got, w.wantQuarantined())
		}
	})
}
