package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/internal/testkit/hostile"
)

// runScriptStep is a tools/call of run_script with source.
func runScriptStep(source, want string) tsStep {
	return tsStep{Op: "call", Tool: "run_script", Args: map[string]any{"source": source}, want: want}
}

// provenanceAudit is the audit trail's provenance records.
func provenanceAudit(t *testing.T, audit string) []string {
	t.Helper()
	trail, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(trail), "\n") {
		if strings.Contains(line, `"msg":"provenance"`) {
			out = append(out, line)
		}
	}
	return out
}

// TestProvenanceDeclassifyTypeScript: with [provenance] declassify =
// "ask", a script's prov.declassify asks the TypeScript SDK client's user
// through elicitation; the value becomes trusted only when they approve,
// so a write steered by a file happens once (approved), not after a
// decline, nor for a client without elicitation (nobody to ask). The
// audit records each decision and none of the values.
func TestProvenanceDeclassifyTypeScript(t *testing.T) {
	modules := nodeModules(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rw := filepath.Join(dir, "rw")
	mkfile(t, filepath.Join(rw, "inbox.txt"), "please write chosen.txt\n")
	audit := filepath.Join(dir, "audit.jsonl")
	cfg := filepath.Join(dir, "capkit.toml")
	mkfile(t, cfg, `audit_log = "audit.jsonl"
[[root]]
path = "rw"
[actor.assistant]
effects = ["read_file", "write_file", "run_script"]
[script]
enabled = true
timeout = "60s"
[provenance]
enabled = true
declassify = "ask"
`)
	script := func(suffix string) string {
		return fmt.Sprintf(`m = tool.call("read_file", "inbox.txt", text=True)
name = "chosen.txt" if "chosen.txt" in m else "other.txt"
ok = prov.declassify(name, "the file the inbox asks for")
tool.call("write_file", {"path": ok + %q, "content": "approved"})
result = prov.trusted(ok)
`, suffix)
	}
	serve := tsPlan{Transport: "stdio", Command: capkit, Args: []string{"serve", "--config", cfg}, Cwd: dir}

	asking := serve
	asking.Elicit = []map[string]any{{"action": "accept", "content": map[string]any{"approve": true}}, {"action": "decline"}}
	asking.Steps = []tsStep{runScriptStep(script(""), ""), runScriptStep(script(".2"), "denied")}
	out := runTS(t, modules, asking)
	checkCalls(t, asking.Steps, out)
	if out.Results[0].Text != "true" {
		t.Errorf("the approved value's label: %q", out.Results[0].Text)
	}
	if len(out.Elicited) != 2 || !strings.Contains(out.Elicited[0], "the file the inbox asks for") || !strings.Contains(out.Elicited[0], `"chosen.txt"`) || !strings.Contains(out.Elicited[0], "read_file") {
		t.Fatalf("the user was asked %q", out.Elicited)
	}
	if !strings.Contains(out.Results[1].Text, "refused to trust") {
		t.Errorf("the declined declassification: %q", out.Results[1].Text)
	}

	silent := serve
	silent.Steps = []tsStep{runScriptStep(script(".3"), "denied")}
	out = runTS(t, modules, silent)
	checkCalls(t, silent.Steps, out)
	if !strings.Contains(out.Results[0].Text, "nobody can be asked") || len(out.Elicited) != 0 {
		t.Errorf("a client without elicitation: %q, asked %q", out.Results[0].Text, out.Elicited)
	}

	if data, err := os.ReadFile(filepath.Join(rw, "chosen.txt")); err != nil || string(data) != "approved" {
		t.Fatalf("the approved write: %q %v", data, err)
	}
	for _, name := range []string{"chosen.txt.2", "chosen.txt.3"} {
		if _, err := os.Lstat(filepath.Join(rw, name)); !os.IsNotExist(err) {
			t.Errorf("%s was written without approval: %v", name, err)
		}
	}
	records := provenanceAudit(t, audit)
	var decisions []string
	for _, r := range records {
		var e struct {
			Event struct{ Tool, Decision string }
		}
		json.Unmarshal([]byte(r), &e)
		decisions = append(decisions, e.Event.Tool+" "+e.Event.Decision)
		if strings.Contains(r, "chosen") {
			t.Errorf("the audit holds a value: %s", r)
		}
	}
	want := "prov.declassify declassified,write_file allowed,prov.declassify denied,prov.declassify denied"
	if strings.Join(decisions, ",") != want {
		t.Errorf("the audit's decisions: %q, want %q", decisions, want)
	}
}

// TestProvenanceUpstreamAndCatalog: the same policies on every route a
// script reaches tools by. Behind capkit serve, the tests' own upstream
// (internal/testkit/hostile, as hostile__TOOL) and two fixed-file
// catalogs; with provenance on, an upstream's result is labelled
// upstream:hostile, an effectful upstream call (hostile__write) whose
// argument came from an upstream's or a catalog's data is refused and
// writes nothing, as is a built-in write from a catalog entry; the host's
// read_only upstream tool takes untrusted arguments, another upstream
// tool does not (every upstream tool is effectful unless the host says
// otherwise), a literal argument reaches hostile__write, and a catalog
// the host trusts may steer a write.
func TestProvenanceUpstreamAndCatalog(t *testing.T) {
	modules := nodeModules(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := hostile.WriteDefs(dir, hostile.Tools()); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rw, out := filepath.Join(dir, "rw"), filepath.Join(dir, "out")
	mkfile(t, filepath.Join(rw, ".keep"), "")
	mkfile(t, filepath.Join(out, ".keep"), "")
	steered, literal := filepath.Join(out, "steered.txt"), filepath.Join(out, "literal.txt")
	mkfile(t, filepath.Join(dir, "cat", "target.txt"), steered)
	mkfile(t, filepath.Join(dir, "cat", "reviewed.txt"), "reviewed.txt")
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	cfg := filepath.Join(dir, "capkit.toml")
	mkfile(t, cfg, fmt.Sprintf(`audit_log = "audit.jsonl"
[[root]]
path = "rw"
[actor.assistant]
effects = ["write_file", "catalog_read", "run_script", "upstream:hostile"]
resources = ["notes", "reviewed"]
[catalog.notes]
[catalog.notes.entries]
"target" = "cat/target.txt"
[catalog.reviewed]
[catalog.reviewed.entries]
"name" = "cat/reviewed.txt"
[upstream.hostile]
command = [%s]
contain = false
env = { %s = "1", %s = %s }
[script]
enabled = true
timeout = "60s"
[provenance]
enabled = true
trusted = ["catalog:reviewed"]
read_only = ["hostile__echo"]
`, q(exe), hostile.Env, hostile.DirEnv, q(dir)))
	if text, code := capkitCLI(t, dir, "upstream", "approve", "--config", cfg); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, text)
	}
	fromUpstream := fmt.Sprintf(`p = tool.call("hostile__echo", {"text": %q}, text=True)`+"\n", steered)
	fromCatalog := `p = tool.call("notes", "target", text=True).strip()` + "\n"
	steps := []tsStep{
		// The upstream's result is labelled with its name; read_only lets
		// hostile__echo take it back.
		runScriptStep(fromUpstream+`again = tool.call("hostile__echo", {"text": p}, text=True)`+"\nresult = prov.label(again)", ""),
		runScriptStep(fromUpstream+`tool.call("hostile__write", {"path": p})`, "denied"),
		runScriptStep(fromUpstream+`tool.call("hostile__read", {"path": p})`, "denied"),
		runScriptStep(fromCatalog+`tool.call("hostile__write", {"path": p})`, "denied"),
		runScriptStep(fromCatalog+`tool.call("write_file", {"path": "x.txt", "content": "x"}) if p else None`, "denied"),
		runScriptStep(fmt.Sprintf(`result = tool.call("hostile__write", {"path": %q}, text=True)`, literal), ""),
		runScriptStep(`n = tool.call("reviewed", "name", text=True).strip()`+"\n"+`tool.call("write_file", {"path": n, "content": "from a reviewed catalog"})`, ""),
	}
	res := runTS(t, modules, tsPlan{Transport: "stdio", Command: capkit, Args: []string{"serve", "--config", cfg}, Cwd: dir, Steps: steps})
	checkCalls(t, steps, res)
	var label struct {
		Trusted bool
		Sources []string
	}
	if err := json.Unmarshal([]byte(res.Results[0].Text), &label); err != nil || label.Trusted || strings.Join(label.Sources, ",") != "hostile__echo(upstream:hostile)" {
		t.Errorf("the upstream result's label: %q %v", res.Results[0].Text, err)
	}
	for i, source := range map[int]string{1: "upstream:hostile", 2: "upstream:hostile", 3: "catalog:notes", 4: "catalog:notes"} {
		if r := res.Results[i].Text; !strings.Contains(r, source) || !strings.Contains(r, "untrusted") {
			t.Errorf("step %d's refusal does not name %s: %q", i, source, r)
		}
	}
	if _, err := os.Lstat(steered); !os.IsNotExist(err) {
		t.Errorf("the steered upstream write happened: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(rw, "x.txt")); !os.IsNotExist(err) {
		t.Errorf("the write under a catalog's control happened: %v", err)
	}
	if _, err := os.Stat(literal); err != nil {
		t.Errorf("the literal upstream write: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(rw, "reviewed.txt")); err != nil || string(data) != "from a reviewed catalog" {
		t.Errorf("the write a trusted catalog steered: %q %v", data, err)
	}
	for _, r := range provenanceAudit(t, filepath.Join(dir, "audit.jsonl")) {
		if strings.Contains(r, "steered") || strings.Contains(r, out) {
			t.Errorf("the audit holds a value: %s", r)
		}
	}
}
