package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/internal/testkit/hostile"
)

// This test binary serves as the hostile upstream (internal/testkit/hostile)
// when its environment asks.
func init() { hostile.ServeIfAsked() }

// TestHostileUpstreamTypeScript puts the tests' own hostile server behind
// capkit serve and drives it with the TypeScript SDK's client: an answer
// past the message bound, a crash mid-call, a result outside its own
// output schema, the upstream's own failure, a protocol error, content
// blocks, and a description changed after approval and announced with
// list_changed (the client is told, the tool leaves its list and calling
// it is integrity); the server answers the next call after each.
func TestHostileUpstreamTypeScript(t *testing.T) {
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
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	config := filepath.Join(dir, "capkit.toml")
	cfg := fmt.Sprintf(`[upstream.hostile]
command = [%s]
contain = false
env = { %s = "1", %s = %s }

[actor.assistant]
effects = ["upstream:hostile"]
`, q(exe), hostile.Env, hostile.DirEnv, q(dir))
	if err := os.WriteFile(config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := capkitCLI(t, dir, "upstream", "approve", "--config", config); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	echo := func(text string) tsStep {
		return tsStep{Op: "call", Tool: "hostile__echo", Args: map[string]any{"text": text}}
	}
	pid := tsStep{Op: "call", Tool: "hostile__pid"}
	steps := []tsStep{
		{Op: "list"},
		echo("first"),
		{Op: "changes"}, // what arrived until now
		{Op: "call", Tool: "hostile__rugpull"},
		{Op: "changes", More: 1},
		{Op: "until_gone", Tool: "hostile__echo"},
		{Op: "call", Tool: "hostile__echo", Args: map[string]any{"text": "after the change"}, want: "integrity"},
		pid,
		{Op: "call", Tool: "hostile__big", want: "limit"},
		pid,
		{Op: "call", Tool: "hostile__crash", want: "unavailable"},
		pid,
		{Op: "call", Tool: "hostile__badout", want: "integrity"},
		{Op: "call", Tool: "hostile__fail", want: "upstream"},
		{Op: "call", Tool: "hostile__protoerr", want: "integrity"},
		{Op: "call", Tool: "hostile__blocks"},
	}
	out := runTS(t, modules, tsPlan{Transport: "stdio", Command: capkit, Args: []string{"serve", "--config", config}, Cwd: dir, Steps: steps})
	checkCalls(t, steps, out)
	names := func(i int) []string {
		var n []string
		for _, tl := range out.Results[i].Tools {
			n = append(n, tl.Name)
		}
		return n
	}
	if first := names(0); !slices.Contains(first, "hostile__echo") || !slices.Contains(first, "hostile__badout") {
		t.Fatalf("the first tools/list: %v", first)
	}
	if got := out.Results[1].Text; got != "first" {
		t.Errorf("echo: %q", got)
	}
	if after := names(5); slices.Contains(after, "hostile__echo") || !slices.Contains(after, "hostile__pid") {
		t.Errorf("tools/list after the description changed: %v", after)
	}
	if before, after := out.Results[2].ListChanged, out.Results[4].ListChanged; after <= before {
		t.Errorf("no notifications/tools/list_changed after the description changed (%d, then %d)", before, after)
	}
	if r := out.Results[6]; !strings.Contains(r.Text, "description") || !strings.Contains(r.Text, "capkit upstream review") {
		t.Errorf("the changed tool's refusal does not name the change and the review: %q", r.Text)
	}
	if a, b := out.Results[9].Text, out.Results[11].Text; a == out.Results[7].Text || b == a {
		t.Errorf("the upstream's pid before big, after it and after the crash: %s %s %s (each stop starts another)", out.Results[7].Text, a, b)
	}
	if got := strings.Join(out.Results[15].Types, ","); got != "text,image,resource_link,audio" {
		t.Errorf("content blocks: %s", got)
	}
	for _, r := range out.Results {
		if strings.Contains(r.Text, "IGNORE ALL PREVIOUS") && r.Tool != "hostile__fail" || strings.Contains(r.Text, "id_rsa") {
			t.Errorf("%s passed on the upstream's injected text: %q", r.Tool, r.Text)
		}
	}
	if strings.Contains(out.Instructions, "IGNORE ALL PREVIOUS") {
		t.Errorf("the upstream's instructions reached the client: %q", out.Instructions)
	}
}
