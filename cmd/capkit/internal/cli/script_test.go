package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary serve as the script worker, as the capkit
// binary does through its hidden `script worker` command (it serves as the
// sandbox helper from run/sandbox's init, as capkit does).
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == "script" && os.Args[2] == "worker" {
		os.Exit(Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	// Contained commands keep their tool caches in the user's cache
	// directory: a temporary one here, so that the tests leave nothing
	// in the real one.
	cache, err := os.MkdirTemp("", "capkit-cli-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	// And what they leave at protected names goes to the quarantine in
	// the user's state directory: a temporary one too.
	state, err := os.MkdirTemp("", "capkit-cli-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	os.RemoveAll(cache)
	os.RemoveAll(state)
	os.Exit(code)
}

// scriptWorkspace writes a root, a reviewed file outside it, a config
// with a catalog, and the given script.
func scriptWorkspace(t *testing.T, src string) (dir, star, cfg string) {
	t.Helper()
	dir = t.TempDir()
	root := filepath.Join(dir, "root")
	files := map[string]string{
		"root/a.txt":       "TODO: one\nnothing\nTODO two\n",
		"reviewed/pat.txt": "TODO\n",
		"s.star":           src,
		"capkit.toml": `[[root]]
path = "root"
[actor.assistant]
effects = ["read_file", "search", "catalog_read"]
resources = ["notes"]
[actor.nobody]
effects = ["read_file"]
[catalog.notes.entries]
"todo.pattern" = "reviewed/pat.txt"
"missing" = "reviewed/missing.txt"
[script]
max_steps = 100000
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_ = root
	return dir, filepath.Join(dir, "s.star"), filepath.Join(dir, "capkit.toml")
}

func TestScriptRun(t *testing.T) {
	cases := []struct {
		name, src string
		args      []string
		code      int
		out, err  string
	}{
		{"result as JSON", `result = {"n": 1}`, nil, 0, `{"n":1}`, ""},
		{"no result is null", `x = 1`, nil, 0, "null", ""},
		{"catalog then grep", "p = tool.call('notes', 'todo.pattern').strip()\nresult = tool.call('grep', {'pattern': p, 'literal': True})['shown']", nil, 0, "2", ""},
		{"print goes to stderr", "print('hello')\nresult = 1", nil, 0, "1", "hello"},
		{"unknown catalog id is generic", `tool.call("notes", "nope")`, nil, 3, "", "no readable entry"},
		{"missing entry file refused at setup", `x = 1`, nil, 2, "", "catalog.notes.entries.missing"},
		{"endless loop ends with limit", "while True:\n  pass", nil, 6, "", "step limit of 100000"},
		{"timeout flag", "while True:\n  pass", []string{"--max-steps", "10000000000", "--timeout", "300ms"}, 6, "", "time limit"},
		{"actor without the grant", `tool.call("notes", "todo.pattern")`, []string{"--actor", "nobody"}, 5, "", "not granted"},
		{"unknown actor", `x = 1`, []string{"--actor", "ghost"}, 3, "", "ghost"},
		{"json output", `result = [1, 2]`, []string{"--json"}, 0, "[\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, star, cfg := scriptWorkspace(t, c.src)
			if c.name != "missing entry file refused at setup" {
				os.WriteFile(filepath.Join(dir, "reviewed/missing.txt"), []byte("x"), 0o644)
			}
			args := append([]string{"script", "run", star, "--config", cfg}, c.args...)
			code, out, errOut := run(t, "", args...)
			if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errOut, c.err) {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
			}
			if c.code == 3 && strings.Contains(errOut, "capkit: not_found") {
				// The caller's message names neither the identifier's file nor an OS error.
				line := errOut[strings.Index(errOut, "capkit: not_found"):]
				if strings.Contains(line, dir) || strings.Contains(line, "no such file") {
					t.Fatalf("leak in %q", line)
				}
			}
		})
	}
}

func TestScriptRunWithoutConfig(t *testing.T) {
	_, star, _ := scriptWorkspace(t, `result = tool.call("read_file", "a.txt")["total_lines"]`)
	code, out, errOut := run(t, "", "script", "run", star, "--root", filepath.Join(filepath.Dir(star), "root"))
	if code != 0 || strings.TrimSpace(out) != "3" {
		t.Fatalf("exit %d %q %q", code, out, errOut)
	}
	code, _, _ = run(t, "", "script", "run", star, "--root", ".", "--config", "x.toml")
	if code != 2 {
		t.Fatalf("--root with --config: exit %d", code)
	}
	code, _, _ = run(t, "", "script", "run", filepath.Join(t.TempDir(), "none.star"))
	if code != 3 {
		t.Fatalf("missing script: exit %d", code)
	}
}

func TestCatalogCheck(t *testing.T) {
	dir, _, cfg := scriptWorkspace(t, "")
	code, out, errOut := run(t, "", "catalog", "check", cfg, "--json")
	if code != 3 {
		t.Fatalf("exit %d %q %q", code, out, errOut)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var rep struct {
		Catalogs []catalogReport `json:"catalogs"`
	}
	if err := dec.Decode(&rep); err != nil {
		t.Fatal(err)
	}
	e := rep.Catalogs[0].Entries
	if len(e) != 2 || e[0].ID != "missing" || e[0].State != "not_found" || e[1].State != "ok" || e[1].Bytes != 5 || rep.Catalogs[0].MaxEntries != 64 {
		t.Fatalf("%+v", rep)
	}
	// Fixed, invalid UTF-8, oversize: each has its state.
	os.WriteFile(filepath.Join(dir, "reviewed/missing.txt"), []byte("ok\xff"), 0o644)
	code, out, _ = run(t, "", "catalog", "check", cfg)
	if code != 9 || !strings.Contains(out, "integrity") || !strings.Contains(out, "todo.pattern") {
		t.Fatalf("exit %d %q", code, out)
	}
	os.WriteFile(filepath.Join(dir, "reviewed/missing.txt"), bytes.Repeat([]byte("x"), 65537), 0o644)
	if code, out, _ = run(t, "", "catalog", "check", cfg); code != 6 || !strings.Contains(out, "limit") {
		t.Fatalf("exit %d %q", code, out)
	}
	os.WriteFile(filepath.Join(dir, "reviewed/missing.txt"), []byte("fine"), 0o644)
	if code, out, _ = run(t, "", "catalog", "check", cfg); code != 0 || strings.Count(out, " ok ") != 2 {
		t.Fatalf("exit %d %q", code, out)
	}
	// Configuration errors are located.
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[catalog.c.entries]\n\"../x\" = \"y\"\n"), 0o644)
	if code, _, errOut = run(t, "", "catalog", "check", bad); code != 2 || !strings.Contains(errOut, "bad.toml:2: catalog.c.entries.../x") {
		t.Fatalf("exit %d %q", code, errOut)
	}
}

// TestScriptRunProvenance: with [provenance] on, a write whose
// path a file decided exits 5 (denied), nothing is written, and the
// decision is in the audit trail without the file's text.
func TestScriptRunProvenance(t *testing.T) {
	src := "m = tool.call('read_file', 'a.txt', text=True)\ntool.call('write_file', {'path': 'one.txt' if 'one' in m else 'two.txt', 'content': 'x'})\n"
	dir, star, cfg := scriptWorkspace(t, src)
	os.WriteFile(filepath.Join(dir, "reviewed/missing.txt"), []byte("x"), 0o644)
	data, _ := os.ReadFile(cfg)
	conf := strings.Replace(string(data), `effects = ["read_file", "search", "catalog_read"]`, `effects = ["read_file", "write_file", "search", "catalog_read"]`, 1)
	conf = "audit_log = \"audit.jsonl\"\n" + conf + "[provenance]\nenabled = true\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "", "script", "run", star, "--config", cfg)
	if code != 5 || !strings.Contains(errOut, "untrusted") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	for _, name := range []string{"one.txt", "two.txt"} {
		if _, err := os.Lstat(filepath.Join(dir, "root", name)); !os.IsNotExist(err) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	trail, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	if err != nil || !strings.Contains(string(trail), `"provenance"`) || !strings.Contains(string(trail), `"denied"`) || strings.Contains(string(trail), "TODO: one") {
		t.Fatalf("audit: %v\n%s", err, trail)
	}
}
