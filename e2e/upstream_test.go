package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gateway's end-to-end suite: capkit serve with real MCP servers from
// npm behind it (server-everything and server-memory, pinned in
// e2e/upstreams and installed by scripts/need-mcp-servers.sh), each run
// in capkit's container, approved with capkit upstream approve, and driven
// by the Go SDK's client, the TypeScript SDK's and the Inspector CLI,
// listing tools first as they do.

// hostSecret is in capkit serve's environment; a contained upstream must
// never see it.
const hostSecret = "HOST_ONLY_SECRET_9137"

// upstreamServers is the node_modules folder holding the pinned MCP
// servers. Under CI=true a missing one fails the test; elsewhere it skips.
func upstreamServers(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CAPKIT_MCP_SERVERS")
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH"
	} else if _, err := os.Stat(filepath.Join(dir, "@modelcontextprotocol", "server-everything", "package.json")); dir == "" || err != nil {
		missing = "the MCP servers are not installed in " + dir + " (run scripts/need-mcp-servers.sh)"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("upstream server suite: %s", missing)
		}
		t.Skipf("upstream server suite: %s", missing)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// upstreamWorld is a configuration with server-everything and
// server-memory as contained upstreams, its lock approved.
type upstreamWorld struct {
	dir, mem, config string
}

// echoMaxCalls is [tool."everything__echo"] max_calls: a per-tool policy
// on an upstream tool.
const echoMaxCalls = 4

// theUpstreamWorld is made once for the tests that share it (its review
// and approval start each server three times).
var theUpstreamWorld struct {
	sync.Mutex
	w *upstreamWorld
}

// sharedUpstreamWorld is the world the upstream tests share, made on
// first use in the test binary's temporary directory.
func sharedUpstreamWorld(t *testing.T, modules string) *upstreamWorld {
	t.Helper()
	theUpstreamWorld.Lock()
	defer theUpstreamWorld.Unlock()
	if theUpstreamWorld.w == nil {
		dir, err := os.MkdirTemp(filepath.Dir(capkit), "upstreams-")
		if err != nil {
			t.Fatal(err)
		}
		theUpstreamWorld.w = newUpstreamWorld(t, dir, modules)
	}
	return theUpstreamWorld.w
}

func newUpstreamWorld(t *testing.T, dir, modules string) *upstreamWorld {
	t.Helper()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := &upstreamWorld{dir: dir, mem: filepath.Join(dir, "mem"), config: filepath.Join(dir, "capkit.toml")}
	if err := os.Mkdir(w.mem, 0o755); err != nil {
		t.Fatal(err)
	}
	readOnly := []string{modules}
	// node outside the system directories (a version manager's) must be
	// visible inside the container too.
	if node, err := exec.LookPath("node"); err == nil {
		if real, err := filepath.EvalSymlinks(node); err == nil && !strings.HasPrefix(real, "/usr/") && !strings.HasPrefix(real, "/bin/") {
			readOnly = append(readOnly, filepath.Dir(filepath.Dir(real)))
		}
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	ro, _ := json.Marshal(readOnly)
	server := func(name string) string {
		return filepath.Join(modules, "@modelcontextprotocol", name, "dist", "index.js")
	}
	cfg := fmt.Sprintf(`[upstream.everything]
command = ["node", %s, "stdio"]
read_only = %s

[upstream.memory]
command = ["node", %s]
env = { MEMORY_FILE_PATH = %s }
roots = [%s]
read_only = %s
tools = ["create_*", "read_graph", "search_nodes"]

[actor.assistant]
effects = ["tool_search", "upstream:everything", "upstream:memory"]

[actor.inspector]
effects = ["upstream:everything"]

[tool."everything__echo"]
max_calls = %d
`, q(server("server-everything")), ro, q(server("server-memory")), q(filepath.Join(w.mem, "memory.json")), q(w.mem), ro, echoMaxCalls)
	if err := os.WriteFile(w.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := capkitCLI(t, dir, "upstream", "review", "--config", w.config)
	if code != 9 || !strings.Contains(out, "new         everything__echo") || !strings.Contains(out, "not allowed") {
		t.Fatalf("review before approval: exit %d\n%s", code, out)
	}
	if out, code := capkitCLI(t, dir, "upstream", "approve", "--config", w.config); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	if out, code := capkitCLI(t, dir, "upstream", "review", "--config", w.config); code != 0 || strings.Contains(out, "new ") {
		t.Fatalf("review after approval: exit %d\n%s", code, out)
	}
	return w
}

// capkitCLI runs the binary as a user would and returns its combined
// output and exit code.
func capkitCLI(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	cmd := exec.CommandContext(ctx, capkit, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	if err != nil {
		t.Fatalf("capkit %v: %v", args, err)
	}
	return string(out), 0
}

// serveEnv is capkit serve's environment: this one plus hostSecret.
func serveEnv() []string {
	return append(os.Environ(), "CAPKIT_E2E_HOST_SECRET="+hostSecret)
}

// TestUpstreamServersGo drives capkit serve with the real servers behind
// it through the Go SDK's client: the upstream tools are deferred until
// tool_search finds them, then called through the kernel (the approved
// input schema, the per-tool budget), their text, image and progress
// passing through, the memory server's state kept across calls in its
// root, and the host's environment out of the container's reach.
func TestUpstreamServersGo(t *testing.T) {
	w := sharedUpstreamWorld(t, upstreamServers(t))
	var progress atomic.Int32
	changed := make(chan struct{}, 16)
	cl := mcp.NewClient(&mcp.Implementation{Name: "capkit-e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
	})
	cmd := exec.Command(capkit, "serve", "--config", w.config)
	cmd.Env, cmd.Dir, cmd.Stderr = serveEnv(), w.dir, &testWriter{t: t}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	c := &client{cs: cs, changed: changed}

	tools := c.tools(t)
	if tools["tool_search"] == nil {
		t.Fatal("tool_search is not listed")
	}
	for n := range tools {
		if strings.Contains(n, "__") {
			t.Fatalf("%s is listed before tool_search selected it", n)
		}
	}
	if !strings.Contains(cs.InitializeResult().Instructions, "other MCP servers") {
		t.Errorf("the instructions do not say whose text upstream tools are: %q", cs.InitializeResult().Instructions)
	}

	text, code := c.call(t, "tool_search", map[string]any{"query": "echo back the input"})
	want(t, "tool_search", code, "")
	if !strings.Contains(text, "everything__echo (from upstream everything)") {
		t.Fatalf("tool_search does not find everything__echo: %q", text)
	}
	c.waitChanged(t)
	tools = c.tools(t)
	echo := tools["everything__echo"]
	if echo == nil || echo.Title != "Echo Tool" || echo.Annotations == nil || !echo.Annotations.ReadOnlyHint {
		t.Fatalf("everything__echo as listed after tool_search: %+v", echo)
	}
	if s, _ := json.Marshal(echo.InputSchema); !strings.Contains(string(s), `"message"`) {
		t.Fatalf("everything__echo's input schema: %s", s)
	}

	text, code = c.call(t, "everything__echo", map[string]any{"message": "through capkit"})
	want(t, "echo", code, "")
	if text != "Echo: through capkit" {
		t.Fatalf("echo: %q", text)
	}
	_, code = c.call(t, "everything__echo", map[string]any{"message": 7})
	want(t, "echo with a number (the approved schema says string)", code, "invalid_input")
	text, code = c.call(t, "everything__get-sum", map[string]any{"a": 2, "b": 3})
	want(t, "get-sum", code, "")
	if !strings.Contains(text, "is 5") {
		t.Fatalf("get-sum: %q", text)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__get-tiny-image"})
	if err != nil || res.IsError {
		t.Fatalf("get-tiny-image: %v %+v", err, res)
	}
	var image *mcp.ImageContent
	for _, ct := range res.Content {
		if im, ok := ct.(*mcp.ImageContent); ok {
			image = im
		}
	}
	if image == nil || image.MIMEType != "image/png" || !bytes.HasPrefix(image.Data, []byte("\x89PNG")) {
		t.Fatalf("get-tiny-image's image did not pass through: %+v", res.Content)
	}

	params := &mcp.CallToolParams{Name: "everything__trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 4}}
	params.SetProgressToken("op-1")
	res, err = cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("long-running operation: %v %+v", err, res)
	}
	if n := progress.Load(); n < 1 || n > 4 {
		t.Errorf("%d progress notifications for 4 steps", n)
	}

	text, code = c.call(t, "memory__create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "capkit", "entityType": "project", "observations": []string{"written in Go"}},
	}})
	want(t, "create_entities", code, "")
	text, code = c.call(t, "memory__read_graph", nil)
	want(t, "read_graph", code, "")
	if !strings.Contains(text, "written in Go") {
		t.Fatalf("read_graph does not hold the entity created before: %q", text)
	}
	if b, err := os.ReadFile(filepath.Join(w.mem, "memory.json")); err != nil || !bytes.Contains(b, []byte("written in Go")) {
		t.Fatalf("the memory server's file in its root: %q %v", b, err)
	}
	// A tool left out by tools is no tool: the MCP server answers as for
	// any unknown tool, with a protocol error.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory__delete_entities", Arguments: map[string]any{"entityNames": []string{"capkit"}}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("delete_entities, left out by tools: %v", err)
	}

	text, code = c.call(t, "everything__get-env", nil)
	want(t, "get-env", code, "")
	if strings.Contains(text, hostSecret) || strings.Contains(text, "CAPKIT_E2E_HOST_SECRET") {
		t.Fatalf("the contained upstream sees capkit's environment: %q", text)
	}

	for i := 2; i < echoMaxCalls; i++ {
		_, code = c.call(t, "everything__echo", map[string]any{"message": "again"})
		want(t, "echo within max_calls", code, "")
	}
	_, code = c.call(t, "everything__echo", map[string]any{"message": "one too many"})
	want(t, "echo past max_calls", code, "limit")
}

// TestUpstreamServersTypeScript is the same session through the
// TypeScript SDK's client (which checks structuredContent against a
// listed output schema), over stdio and Streamable HTTP.
func TestUpstreamServersTypeScript(t *testing.T) {
	modules := nodeModules(t)
	w := sharedUpstreamWorld(t, upstreamServers(t))
	steps := []tsStep{
		{Op: "list"},
		{Op: "call", Tool: "tool_search", Args: map[string]any{"query": "echo sum image structured content long running operation"}},
		{Op: "changes", Min: 1},
		{Op: "list"},
		{Op: "call", Tool: "everything__echo", Args: map[string]any{"message": "from TypeScript"}},
		{Op: "call", Tool: "everything__get-sum", Args: map[string]any{"a": 20, "b": 22}},
		{Op: "call", Tool: "everything__get-tiny-image"},
		{Op: "call", Tool: "everything__get-structured-content", Args: map[string]any{"location": "New York"}},
		{Op: "call", Tool: "everything__trigger-long-running-operation", Args: map[string]any{"duration": 1, "steps": 4}, Progress: true},
		{Op: "call", Tool: "memory__create_entities", Args: map[string]any{"entities": []any{
			map[string]any{"name": "ts", "entityType": "client", "observations": []string{"typed"}},
		}}},
		{Op: "call", Tool: "memory__search_nodes", Args: map[string]any{"query": "typed"}},
		{Op: "call", Tool: "everything__echo", Args: map[string]any{}, want: "invalid_input"},
	}
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			plan := tsPlan{Transport: transport, Steps: steps}
			if transport == "stdio" {
				plan.Command, plan.Args, plan.Cwd = capkit, []string{"serve", "--config", w.config}, w.dir
			} else {
				plan.URL, _ = httpServer(t, "--config", w.config)
			}
			out := runTS(t, modules, plan)
			checkCalls(t, steps, out)
			for _, tl := range out.Results[0].Tools {
				if strings.Contains(tl.Name, "__") {
					t.Fatalf("%s is listed before tool_search selected it", tl.Name)
				}
			}
			listed := map[string]bool{}
			for _, tl := range out.Results[3].Tools {
				listed[tl.Name] = tl.OutputSchema
			}
			if _, ok := listed["everything__echo"]; !ok || !listed["everything__get-structured-content"] {
				t.Fatalf("after tool_search: %v", listed)
			}
			if r := out.Results[4]; r.Text != "Echo: from TypeScript" {
				t.Errorf("echo: %q", r.Text)
			}
			if r := out.Results[5]; !strings.Contains(r.Text, "is 42") {
				t.Errorf("get-sum: %q", r.Text)
			}
			if r := out.Results[6]; !strings.Contains(strings.Join(r.Types, ","), "image") {
				t.Errorf("get-tiny-image's content types: %v", r.Types)
			}
			if r := out.Results[7]; !strings.Contains(string(r.Structured), "temperature") {
				t.Errorf("get-structured-content: %s", r.Structured)
			}
			if r := out.Results[8]; r.Progress < 1 || r.Progress > 4 {
				t.Errorf("%d progress notifications for 4 steps", r.Progress)
			}
			if r := out.Results[10]; !strings.Contains(r.Text, "typed") {
				t.Errorf("search_nodes does not find the entity created before: %q", r.Text)
			}
		})
	}
}

// TestUpstreamInspectorCLI runs the MCP Inspector's command-line mode
// against capkit serve with the servers behind it. The Inspector calls
// only a tool it has listed, in a session of its own each time, so the
// actor it runs as has no tool_search: every tool granted is listed (only
// everything's here), and called.
func TestUpstreamInspectorCLI(t *testing.T) {
	modules := nodeModules(t)
	bin := filepath.Join(modules, ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the Inspector is not installed in %s (run scripts/need-node-sdk.sh)", modules)
		}
		t.Skipf("the Inspector is not installed in %s (run scripts/need-node-sdk.sh)", modules)
	}
	w := sharedUpstreamWorld(t, upstreamServers(t))
	inspect := func(fails bool, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
		defer cancel()
		// The Inspector takes --config for itself: the server's command
		// and its flags come after --.
		cmd := exec.CommandContext(ctx, bin, append(append([]string{"--cli"}, args...), "--", capkit, "serve", "--config", w.config, "--actor", "inspector")...)
		cmd.Dir = w.dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); (err != nil) != fails {
			t.Fatalf("inspector %v: %v\nstdout: %.2000s\nstderr: %.2000s", args, err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	if list := inspect(false, "--method", "tools/list"); !strings.Contains(list, `"everything__echo"`) || strings.Contains(list, "memory__") || strings.Contains(list, `"tool_search"`) {
		t.Fatalf("tools/list through the Inspector: %.2000s", list)
	}
	if res := inspect(false, "--method", "tools/call", "--tool-name", "everything__echo", "--tool-arg", "message=inspected"); !strings.Contains(res, "Echo: inspected") {
		t.Fatalf("tools/call through the Inspector: %.2000s", res)
	}
	if res := inspect(true, "--method", "tools/call", "--tool-name", "everything__echo"); !strings.Contains(res, "invalid_input: ") {
		t.Fatalf("a call outside the approved input schema, through the Inspector: %.2000s", res)
	}
}

// TestUpstreamCLIRoutes: capkit call and a Starlark script reach the
// upstream tools through the same kernel: the result, the approved input
// schema's refusal (exit 2), and memory's state read back by a script;
// capkit tools, which lists once, lists an upstream's tools offered from
// the start (an actor without tool_search) once it has started, as a
// host's loop is given them (--format).
func TestUpstreamCLIRoutes(t *testing.T) {
	w := sharedUpstreamWorld(t, upstreamServers(t))
	for _, args := range [][]string{{"tools"}, {"tools", "--format", "openai"}} {
		out, code := capkitCLI(t, w.dir, append(args, "--config", w.config, "--actor", "inspector")...)
		if code != 0 || !regexp.MustCompile(`(?m)^everything__echo +(hot|-) `).MatchString(out) {
			t.Fatalf("capkit %s: exit %d, everything__echo is not offered:\n%s", strings.Join(args, " "), code, out)
		}
	}
	out, code := capkitCLI(t, w.dir, "call", "everything__echo", `{"message": "from capkit call"}`, "--config", w.config)
	if code != 0 || !strings.Contains(out, "Echo: from capkit call") {
		t.Fatalf("capkit call: exit %d\n%s", code, out)
	}
	if out, code := capkitCLI(t, w.dir, "call", "everything__echo", `{"message": 1}`, "--config", w.config); code != 2 || !strings.Contains(out, "invalid_input") {
		t.Fatalf("capkit call outside the approved schema: exit %d\n%s", code, out)
	}
	script := filepath.Join(w.dir, "graph.star")
	src := `tool.call("memory__create_entities", {"entities": [{"name": "starlark", "entityType": "route", "observations": ["scripted"]}]})
g = tool.call("memory__read_graph", {})
result = [e["name"] for e in g["entities"]]
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := capkitCLI(t, w.dir, "script", "run", script, "--config", w.config); code != 0 || !strings.Contains(out, `"starlark"`) {
		t.Fatalf("script run: exit %d\n%s", code, out)
	}
}
