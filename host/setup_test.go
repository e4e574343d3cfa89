package host

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/capkit/capkit/audit/trail"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/tools"
	"github.com/capkit/capkit/host/config"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// fixture makes a writable root rw with a.txt, a read-only root ro with
// b.txt and a logs directory, and returns the directory.
func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"rw", "ro", "logs"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, s := range map[string]string{"rw/a.txt": "alpha\n", "ro/b.txt": "beta\n"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func load(t *testing.T, dir, doc string) *config.Config {
	t.Helper()
	p := filepath.Join(dir, "capkit.toml")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startSession starts a host on cfg, closed when the test ends, and a
// trusted session of actor on it.
func startSession(t *testing.T, cfg *config.Config, actor string) (*Host, *kernel.Session) {
	t.Helper()
	h, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	s, err := h.NewSession(actor, true)
	if err != nil {
		t.Fatal(err)
	}
	return h, s
}

const base = `
audit_log = "logs/audit.jsonl"
log = "logs/capkit.log"
[[root]]
path = "rw"
[[root]]
path = "ro"
read_only = true
`

func call(t *testing.T, s *kernel.Session, tool, args string) (*kernel.Result, error) {
	t.Helper()
	return s.Call(context.Background(), tool, json.RawMessage(args))
}

func TestPoliciesAndUnknownTools(t *testing.T) {
	dir := fixture(t)
	cfg := load(t, dir, base+"[tool.read_file]\nmax_calls = 2\ntimeout = \"5s\"\n[tool.tool_search]\nmax_calls = 3\nmax_concurrent = 7\n")
	h, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	p, _ := h.Runtime.Policy(tools.ReadFile)
	def := tools.DefaultPolicy(tools.ReadFile)
	if p.MaxCalls != 2 || p.Timeout.Seconds() != 5 || p.MaxOutputBytes != def.MaxOutputBytes {
		t.Fatalf("read_file policy = %+v: set fields replace, others keep the tool's own", p)
	}
	if p.MaxConcurrent != limits.DefaultMaxConcurrent {
		t.Fatalf("read_file policy = %+v: max_concurrent not set, so the tool's own", p)
	}
	if p, _ := h.Runtime.Policy("tool_search"); p.MaxCalls != 3 || p.MaxConcurrent != 7 {
		t.Fatalf("tool_search policy = %+v", p)
	}
	if p, _ := h.Runtime.Policy(tools.WriteFile); p.MaxCalls != limits.FileToolsWriteMaxCalls {
		t.Fatalf("write_file policy = %+v", p)
	}
	s, err := h.NewSession(config.DefaultActor, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		_, err := call(t, s, tools.ReadFile, `{"path":"a.txt"}`)
		if want := fault.Code(""); i == 2 {
			if want = fault.Limit; fault.CodeOf(err) != want {
				t.Fatalf("call %d: %v", i+1, err)
			}
		} else if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}

	bad := load(t, dir, base+"\n[tool.raed_file]\nmax_calls = 2\n")
	_, err = New(bad, nil)
	errs := config.Errors(err)
	if len(errs) != 1 || !strings.HasSuffix(errs[0].Error(), `capkit.toml:10: tool.raed_file: no tool "raed_file" is registered (capkit tools --all lists them)`) {
		t.Fatalf("unknown tool: %v", err)
	}
}

func TestGrants(t *testing.T) {
	dir := fixture(t)
	cfg, err := config.FromFlags([]string{filepath.Join(dir, "rw")}, []string{filepath.Join(dir, "ro")})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	s, err := h.NewSession(config.DefaultActor, true)
	if err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(dir, "ro", "b.txt")
	cases := []struct {
		name, tool, args string
		code             fault.Code
	}{
		{"read writable", tools.ReadFile, `{"path":"a.txt"}`, ""},
		{"read read-only", tools.ReadFile, `{"path":"` + ro + `"}`, ""},
		{"create in writable", tools.WriteFile, `{"path":"new.txt","content":"x"}`, ""},
		{"write read-only", tools.WriteFile, `{"path":"` + filepath.Join(dir, "ro", "c.txt") + `","content":"x"}`, fault.Denied},
		{"edit read-only", tools.EditFile, `{"path":"` + ro + `","old_string":"beta","new_string":"gamma"}`, fault.Denied},
		{"outside every root", tools.ReadFile, `{"path":"` + filepath.Join(dir, "capkit.toml") + `"}`, fault.Denied},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := call(t, s, c.tool, c.args); fault.CodeOf(err) != c.code {
				t.Fatalf("%s: %v, want %q", c.tool, err, c.code)
			}
		})
	}
	if got, _ := os.ReadFile(ro); string(got) != "beta\n" {
		t.Fatalf("read-only file changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "ro", "c.txt")); !os.IsNotExist(err) {
		t.Fatal("file created under the read-only root")
	}

	// A read-only-only configuration does not even offer writing tools.
	cfg, err = config.FromFlags(nil, []string{filepath.Join(dir, "ro")})
	if err != nil {
		t.Fatal(err)
	}
	h2, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	newSession, err := h2.Sessions(config.DefaultActor)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := newSession(context.Background())
	if err != nil || s2.Trusted() {
		t.Fatalf("MCP sessions must be untrusted: %v", err)
	}
	for _, e := range s2.Specs() {
		if e.Name == tools.WriteFile || e.Name == tools.EditFile {
			t.Fatalf("%s offered on a read-only root", e.Name)
		}
	}
	if _, err := call(t, s2, tools.WriteFile, `{"path":"x","content":"x"}`); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("write with no writable root: %v", err)
	}
	if _, err := h2.Sessions("nobody"); fault.CodeOf(err) != fault.NotFound {
		t.Fatalf("unknown actor: %v", err)
	}
}

func TestLogs(t *testing.T) {
	dir := fixture(t)
	auditPath := filepath.Join(dir, "logs", "audit.jsonl")
	if err := os.WriteFile(auditPath, []byte("{\"earlier\":true}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := New(load(t, dir, base), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := h.NewSession(config.DefaultActor, false)
	const marker = "MARKER_CONTENT_7731"
	call(t, s, tools.WriteFile, `{"path":"m.txt","content":"`+marker+`"}`)
	call(t, s, tools.ReadFile, `{"path":"missing-`+marker+`.txt"}`)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	// A trail of another format (an older capkit's JSON lines) is set
	// aside untouched and a new chain begins, naming it.
	audit, _ := os.ReadFile(auditPath)
	lines := strings.Split(strings.TrimSpace(string(audit)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"msg":"audit trail set aside"`) {
		t.Fatalf("audit trail: %q", audit)
	}
	if !strings.Contains(lines[1], `"tool":"write_file"`) || !strings.Contains(lines[2], `"outcome":"not_found"`) {
		t.Fatalf("audit events: %q", lines[1:])
	}
	if _, err := trail.Verify(context.Background(), []string{auditPath}, 0, ""); err != nil {
		t.Fatal(err)
	}
	aside, _ := filepath.Glob(auditPath + ".*.unchained")
	if len(aside) != 1 {
		t.Fatalf("set aside: %v", aside)
	}
	if old, _ := os.ReadFile(aside[0]); string(old) != "{\"earlier\":true}\n" {
		t.Fatalf("the old trail was changed: %q", old)
	}
	if strings.Contains(string(audit), marker) {
		t.Fatal("the audit log carries content or arguments")
	}
	for _, name := range []string{"audit.jsonl", "capkit.log"} {
		st, err := os.Stat(filepath.Join(dir, "logs", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "capkit.log" && st.Mode().Perm() != 0o600 {
			t.Fatalf("%s created with mode %v", name, st.Mode().Perm())
		}
	}
	detail, _ := os.ReadFile(filepath.Join(dir, "logs", "capkit.log"))
	if !strings.Contains(string(detail), `"tool":"read_file"`) || !strings.Contains(string(detail), `"code":"not_found"`) {
		t.Fatalf("the detail log lacks the failure: %q", detail)
	}

	// Without a log file, detail goes to Options.Log.
	var buf bytes.Buffer
	cfg, _ := config.FromFlags([]string{filepath.Join(dir, "rw")}, nil)
	h, err = New(cfg, &Options{Log: &buf})
	if err != nil {
		t.Fatal(err)
	}
	s, _ = h.NewSession(config.DefaultActor, false)
	call(t, s, tools.ReadFile, `{"path":"missing.txt"}`)
	if !strings.Contains(buf.String(), "tool=read_file") {
		t.Fatalf("Options.Log: %q", buf.String())
	}

	// A log path that is not a regular file fails, and closes what opened.
	if err := syscall.Mkfifo(filepath.Join(dir, "logs", "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{
		"log = \"logs\"\n" + base[strings.Index(base, "[[root]]"):],
		"audit_log = \"logs/fifo\"\n" + base[strings.Index(base, "[[root]]"):],
	} {
		_, err := New(load(t, dir, doc), nil)
		if err == nil {
			t.Fatalf("%q: no error", doc)
		}
	}
}

// TestUnusedEffects: an actor granted an effect that no registered tool
// declares is a configuration error naming the effect, not a silent grant.
func TestUnusedEffects(t *testing.T) {
	dir := fixture(t)
	cfg := load(t, dir, base+"[actor.a]\neffects = [\"read_file\", \"run_shell\"]\n")
	b := kernel.NewBuilder(nil)
	if err := tools.RegisterTools(b, &tools.ToolOptions{DisableGate: true}); err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	errs := unusedEffects(cfg, rt)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `actor.a.effects: effect "run_shell" grants no tool`) {
		t.Fatalf("%v", errs)
	}
}

// TestRootsDiscoveryAndAddressing is the README's example, --root P
// --read-only D: the model is told both roots and their modes (the
// instructions and list_roots), relative paths start at P, and D/x by its
// absolute path can be read but not written.
func TestRootsDiscoveryAndAddressing(t *testing.T) {
	dir := fixture(t)
	p, d := filepath.Join(dir, "rw"), filepath.Join(dir, "ro")
	cfg, err := config.FromFlags([]string{p}, []string{d})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	s, err := h.NewSession(config.DefaultActor, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"relative paths start at the first, " + p,
		"- " + p + " (read-write)",
		"- " + d + " (read-only",
	}
	res, err := call(t, s, tools.ListRoots, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if text := h.Instructions(s); !strings.HasSuffix(text, "\nRead-only for every tool, whatever the root's mode (the host reads or runs them later): .git, capkit.toml\n") {
		t.Errorf("%q does not name the protected paths of the writable root (only)", text)
	}
	for _, text := range []string{h.Instructions(s), res.Text} {
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%q lacks %q", text, w)
			}
		}
	}
	if !strings.Contains(string(res.Structured), `{"path":"`+d+`","mode":"read-only"}`) {
		t.Errorf("list_roots structured: %s", res.Structured)
	}
	bx := filepath.Join(d, "b.txt")
	if res, err := call(t, s, tools.ReadFile, `{"path":"`+bx+`"}`); err != nil || !strings.Contains(res.Text, "beta") {
		t.Fatalf("read %s: %v", bx, err)
	}
	if res, err := call(t, s, tools.ReadFile, `{"path":"a.txt"}`); err != nil || !strings.Contains(res.Text, "alpha") {
		t.Fatalf("relative a.txt (in %s): %v", p, err)
	}
	// The README's trap: docs/x relative is looked for in P; the failure
	// says so and names D.
	if _, err := call(t, s, tools.ReadFile, `{"path":"b.txt"}`); fault.CodeOf(err) != fault.NotFound ||
		!strings.Contains(err.Error(), "relative paths start at the first writable root, "+p) || !strings.Contains(err.Error(), d+" (read-only)") {
		t.Errorf("relative b.txt: %v", err)
	}
	for _, args := range []string{
		`{"path":"` + bx + `","content":"x"}`,
		`{"path":"` + filepath.Join(d, "new.txt") + `","content":"x"}`,
	} {
		if _, err := call(t, s, tools.WriteFile, args); fault.CodeOf(err) != fault.Denied {
			t.Errorf("write_file %s: %v, want denied", args, err)
		}
	}
	if data, _ := os.ReadFile(bx); string(data) != "beta\n" {
		t.Errorf("%s changed: %q", bx, data)
	}
}

// TestEveryToolHasATitle: a client shows the title in place of the name.
func TestEveryToolHasATitle(t *testing.T) {
	dir := fixture(t)
	h, err := New(load(t, dir, base+"[catalog.notes.entries]\na = \"rw/a.txt\"\n[script]\nenabled = true\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, e := range h.Runtime.Catalog().Entries() {
		if e.Annotations == nil || e.Annotations.Title == "" {
			t.Errorf("%s has no title of its own (only the one derived from its name)", e.Name)
		}
	}
	for _, name := range []string{"notes", "run_script", "tool_search", tools.ListRoots} {
		if _, _, ok := h.Runtime.Catalog().Lookup(name); !ok {
			t.Errorf("%s is not registered: the test does not cover it", name)
		}
	}
}

// TestUnconfiguredToolsNotOffered: without [semindex] model the semantic
// index tools are not registered (they could only fail), the lexical ones
// still are, and the host's log says why; a [tool.semindex_*] table then
// fails naming the reason.
func TestUnconfiguredToolsNotOffered(t *testing.T) {
	dir := fixture(t)
	const actor = "[actor.a]\neffects = [\"index_read\", \"index_write\"]\n"
	var log bytes.Buffer
	doc := strings.Replace(base, "log = \"logs/capkit.log\"\n", "", 1) + actor
	h, err := New(load(t, dir, doc), &Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, ok := h.Runtime.Policy("lexindex_search"); !ok {
		t.Fatal("lexindex_search is not registered")
	}
	for _, e := range h.Runtime.Catalog().Entries() {
		if strings.HasPrefix(e.Name, "semindex_") {
			t.Errorf("%s is offered without a model", e.Name)
		}
	}
	if !strings.Contains(log.String(), "semindex_") || !strings.Contains(log.String(), "[semindex] model is not set") {
		t.Fatalf("the log does not say why: %s", log.String())
	}
	if _, ok := h.Runtime.Policy("archive_search"); ok || !strings.Contains(log.String(), "[archive] root is not set") {
		t.Fatalf("the archive tools without a root: %s", log.String())
	}
	_, err = New(load(t, dir, doc+"[tool.semindex_search]\nmax_calls = 5\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "[semindex] model is not set") {
		t.Fatalf("a policy for a tool not offered: %v", err)
	}
	h, err = New(load(t, dir, doc+"[semindex]\nmodel = \"models/minilm\"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, ok := h.Runtime.Policy("semindex_search"); !ok {
		t.Fatal("semindex_search is not registered with a model")
	}
}

// TestDenialPolicies: a denial the roots decide names, in the trail, the
// rule that decided it, as the kernel's own denials do: an operator
// reading the trail sees why without the call's arguments.
func TestDenialPolicies(t *testing.T) {
	dir := fixture(t)
	if err := os.Symlink("/etc", filepath.Join(dir, "rw", "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "rw", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := New(load(t, dir, base), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := h.NewSession(config.DefaultActor, false)
	for _, c := range []struct{ tool, args, policy string }{
		{tools.WriteFile, `{"path":"` + dir + `/ro/new.txt","content":"x"}`, "roots:write_file"},
		{tools.ReadFile, `{"path":"/etc/hostname"}`, "roots"},
		{tools.ReadFile, `{"path":"../x"}`, "roots"},
		{tools.ReadFile, `{"path":"out/hostname"}`, "roots"},
		{tools.WriteFile, `{"path":".git/config","content":"x"}`, "protected"},
	} {
		if _, err := call(t, s, c.tool, c.args); fault.CodeOf(err) != fault.Denied {
			t.Fatalf("%s %s: %v, want denied", c.tool, c.args, err)
		}
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	trailText, _ := os.ReadFile(filepath.Join(dir, "logs", "audit.jsonl"))
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(trailText)), "\n") {
		var rec struct {
			Event struct{ Msg, Outcome, Policy string }
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Event.Msg == "call" {
			got = append(got, rec.Event.Outcome+" "+rec.Event.Policy)
		}
	}
	want := []string{"denied roots:write_file", "denied roots", "denied roots", "denied roots", "denied protected"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("denials in the trail: %q, want %q", got, want)
	}
}
