package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "write docs/tools.md's catalog from the kernel's (TestToolsDoc)")

// The generated part of docs/tools.md lies between these lines.
const (
	toolsDocBegin = "<!-- The catalog below is generated: go test ./cmd/capkit/internal/cli -run TestToolsDoc -update -->"
	toolsDocEnd   = "<!-- End of the generated catalog. -->"
)

// allToolsConfig is a configuration that registers every tool capkit has
// but the gateway's (an upstream's tools are its own), in dir.
func allToolsConfig(t *testing.T, repo, dir string) string {
	t.Helper()
	for _, d := range []string{"root", "budget", "archive-budget"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errOut := run(t, "", "archive", "init", filepath.Join(dir, "archive")); code != 0 {
		t.Fatalf("archive init: %s", errOut)
	}
	os.WriteFile(filepath.Join(dir, "root", "note.txt"), []byte("a note\n"), 0o600)
	ex := func(name string) string { return filepath.Join(repo, "examples", name) }
	cfg := fmt.Sprintf(`[[root]]
path = "root"

[actor.model]

[semindex]
model = %q

[net]
http_policy = %q
budget_policy = %q
budget_root = "budget"

[archive]
root = "archive"
source_policy = %q
budget_root = "archive-budget"

[script]
enabled = true

[catalog.notes]
[catalog.notes.entries]
"note" = "root/note.txt"

[test]
command = ["true"]

[build]
command = ["true"]
`, filepath.Join(repo, "search", "semindex", "bert", "testdata", "tiny"), ex("http-policy.json"), ex("budget-policy.json"), ex("source-policy.json"))
	path := filepath.Join(dir, "capkit.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// toolsCatalog renders every registered tool as capkit tools --all --json
// reports it: its state under this configuration's actor, effect, bounds,
// description and arguments.
func toolsCatalog(t *testing.T, specs []toolSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d tools. *hot*: listed from the start; *deferred*: listed once tool_search finds it; *not granted*: registered, granted by a configuration that names its effect.\n\n", len(specs))
	b.WriteString("| tool | effect | listed | max calls | input | output | timeout |\n|---|---|---|---|---|---|---|\n")
	for _, s := range specs {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %d | %d | %d | %s |\n", s.Name, s.Name, s.Effect, strings.ReplaceAll(s.State, "_", " "), s.Policy.MaxCalls, s.Policy.MaxInputBytes, s.Policy.MaxOutputBytes, s.Policy.Timeout)
	}
	for _, s := range specs {
		fmt.Fprintf(&b, "\n### %s\n\n%s\n", s.Name, strings.TrimSpace(s.Description))
		if args := toolArgs(t, s); args != "" {
			b.WriteString("\n| argument | type | what |\n|---|---|---|\n" + args)
		}
	}
	return b.String()
}

// toolArgs is a table row for each of s's top-level arguments, required
// ones marked.
func toolArgs(t *testing.T, s toolSpec) string {
	var schema struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(s.InputSchema, &schema); err != nil {
		t.Fatalf("%s: input schema: %v", s.Name, err)
	}
	var b strings.Builder
	names := make([]string, 0, len(schema.Properties))
	for n := range schema.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := schema.Properties[n]
		typ := fmt.Sprint(p.Type)
		if p.Type == nil {
			typ = "any"
		}
		name := "`" + n + "`"
		if slices.Contains(schema.Required, n) {
			name += " (required)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, strings.Trim(typ, "[]"), strings.ReplaceAll(strings.ReplaceAll(p.Description, "|", "\\|"), "\n", " "))
	}
	return b.String()
}

// TestToolsDoc fails when docs/tools.md's catalog is not the one the
// kernel's registrations make (-update writes it).
func TestToolsDoc(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", "..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cfg := allToolsConfig(t, repo, t.TempDir())
	code, out, errOut := run(t, "", "tools", "--config", cfg, "--all", "--json")
	if code != 0 {
		t.Fatalf("capkit tools: exit %d: %s%s", code, out, errOut)
	}
	var specs []toolSpec
	if err := json.Unmarshal([]byte(out), &specs); err != nil {
		t.Fatalf("capkit tools --json: %v", err)
	}
	for _, want := range []string{"read_file", "semindex_search", "net_fetch", "archive_search", "run_build", "run_script", "notes"} {
		if !slices.ContainsFunc(specs, func(s toolSpec) bool { return s.Name == want }) {
			t.Errorf("the configuration registers no %s", want)
		}
	}
	path := filepath.Join(repo, "docs", "tools.md")
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(page), toolsDocBegin+"\n")
	if !ok {
		t.Fatalf("%s has no line %q", path, toolsDocBegin)
	}
	want := head + toolsDocBegin + "\n\n" + toolsCatalog(t, specs) + "\n" + toolsDocEnd + "\n"
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(page) != want {
		t.Errorf("%s is stale: run go test ./cmd/capkit/internal/cli -run TestToolsDoc -update", path)
	}
}
