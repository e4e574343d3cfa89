// Package e2e drives the real capkit binary: TestMain builds it once, and
// the tests talk to `capkit serve` with the MCP Go SDK's client and with
// the TypeScript SDK's (tsclient_test.go, through Node) over stdio and
// Streamable HTTP, run the Inspector CLI against it, and run `capkit call`
// and `capkit tools` as a user would, checking exit codes; and open the
// audit page in headless Chromium (browser_test.go, dashpage_test.go).
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/internal/testkit/pgtest"
)

// capkit is the binary under test.
var capkit string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "capkit-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	capkit = filepath.Join(dir, "capkit")
	// -buildvcs=true as a plain `go build` in a checkout does (the
	// machine's go env may turn it off), so that `capkit version` has a
	// revision to report.
	// capkit-otel, the OpenTelemetry exporter, beside it, where capkit
	// looks for it.
	build := exec.Command("go", "build", "-buildvcs=true", "-o", dir+"/", "github.com/capkit/capkit/cmd/capkit", "github.com/capkit/capkit/cmd/capkit-otel")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building capkit:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	keepCaches(dir)
	code := pgtest.Main(m) // stops the PostgreSQL server a test started
	stopBrowser()          // ends the chromium the browser tests shared
	os.RemoveAll(dir)
	os.Exit(code)
}

// keepCaches points the user cache and state directories of the binaries
// the tests start into dir, so that the contained commands' tool caches
// and quarantines are left nowhere else, while Go's build cache and the
// pinned node modules stay where they were found.
func keepCaches(dir string) {
	if os.Getenv("GOCACHE") == "" {
		if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
			os.Setenv("GOCACHE", strings.TrimSpace(string(out)))
		}
	}
	if user, err := os.UserCacheDir(); err == nil && os.Getenv("CAPKIT_NODE_MODULES") == "" {
		os.Setenv("CAPKIT_NODE_MODULES", filepath.Join(user, "capkit-node", "node_modules"))
	}
	if user, err := os.UserCacheDir(); err == nil && os.Getenv("CAPKIT_MCP_SERVERS") == "" {
		os.Setenv("CAPKIT_MCP_SERVERS", filepath.Join(user, "capkit-mcp-servers", "node_modules"))
	}
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	// The quarantine of what commands leave at protected names, too.
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
}

// marker is in the file outside every root; it must never appear in any
// output.
const marker = "OUTSIDE_MARKER_5150"

// tree makes rw/ (writable), ro/ (read-only) and outside/ with its files and
// returns the directory, symlinks resolved.
func tree(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"rw/notes.txt":      "one\ntwo\nthree\n",
		"rw/unread.txt":     "never read\n",
		"rw/changed.txt":    "before\n",
		"rw/move-me.txt":    "moving\n",
		"ro/ref.txt":        "reference\n",
		"outside/secret.md": marker + "\n",
	}
	for p, s := range files {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// client is an MCP client session that records tools/list_changed.
type client struct {
	cs      *mcp.ClientSession
	changed chan struct{}
}

func connect(t testing.TB, transport mcp.Transport) *client {
	t.Helper()
	c := &client{changed: make(chan struct{}, 16)}
	cl := mcp.NewClient(&mcp.Implementation{Name: "capkit-e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.changed <- struct{}{}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cs, err := cl.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	c.cs = cs
	t.Cleanup(func() { cs.Close() })
	return c
}

// call runs a tool and returns the result's text and fault code ("" on
// success). A protocol error fails the test.
func (c *client) call(t *testing.T, tool string, args map[string]any) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	var text strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if strings.Contains(text.String(), marker) {
		t.Fatalf("%s: content from outside the roots leaked: %q", tool, text.String())
	}
	if !res.IsError {
		return text.String(), ""
	}
	m, _ := res.Meta["capkit/fault"].(map[string]any)
	code, _ := m["code"].(string)
	if code == "" {
		t.Fatalf("%s: isError result without a fault code: %+v", tool, res)
	}
	return text.String(), code
}

func (c *client) tools(t *testing.T) map[string]*mcp.Tool {
	t.Helper()
	res, err := c.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		out[tl.Name] = tl
	}
	return out
}

func (c *client) waitChanged(t *testing.T) {
	t.Helper()
	select {
	case <-c.changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
	}
}

func want(t *testing.T, what, code, wantCode string) {
	t.Helper()
	if code != wantCode {
		t.Fatalf("%s: fault %q, want %q", what, code, wantCode)
	}
}

func stdioClient(t *testing.T, args ...string) *client {
	t.Helper()
	cmd := exec.Command(capkit, append([]string{"serve"}, args...)...)
	cmd.Stderr = &testWriter{t: t}
	return connect(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second})
}

// testWriter sends the server's stderr to the test log.
type testWriter struct{ t testing.TB }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("capkit: %s", strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestStdio is the MCP session a model would have over stdio, with
// --root and --read-only and no configuration file.
func TestStdio(t *testing.T) {
	dir := tree(t)
	rw, ro := filepath.Join(dir, "rw"), filepath.Join(dir, "ro")
	c := stdioClient(t, "--root", rw, "--read-only", ro)

	t.Run("list tools", func(t *testing.T) {
		tools := c.tools(t)
		for _, n := range []string{"read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "tool_search"} {
			if tools[n] == nil || tools[n].InputSchema == nil || tools[n].Description == "" {
				t.Errorf("%s missing or incomplete", n)
			}
		}
		if tools["move_file"] != nil {
			t.Error("move_file is deferred: it must not be listed before tool_search")
		}
		if a := tools["read_file"].Annotations; a == nil || !a.ReadOnlyHint {
			t.Errorf("read_file annotations = %+v", a)
		}
	})
	t.Run("read", func(t *testing.T) {
		text, code := c.call(t, "read_file", map[string]any{"path": "notes.txt"})
		want(t, "read", code, "")
		if !strings.Contains(text, "two") || !strings.Contains(text, "3") {
			t.Fatalf("read text = %q", text)
		}
		text, code = c.call(t, "read_file", map[string]any{"path": filepath.Join(ro, "ref.txt")})
		want(t, "read read-only root", code, "")
		if !strings.Contains(text, "reference") {
			t.Fatalf("read ro = %q", text)
		}
	})
	t.Run("edit without reading", func(t *testing.T) {
		_, code := c.call(t, "edit_file", map[string]any{"path": "unread.txt", "old_string": "never", "new_string": "now"})
		want(t, "edit unread", code, "conflict")
		if got := readFile(t, filepath.Join(rw, "unread.txt")); got != "never read\n" {
			t.Fatalf("unread.txt changed: %q", got)
		}
	})
	t.Run("edit after reading", func(t *testing.T) {
		_, code := c.call(t, "edit_file", map[string]any{"path": "notes.txt", "old_string": "two", "new_string": "TWO"})
		want(t, "edit", code, "")
		// The session's own edit counts as observed: no re-read needed.
		_, code = c.call(t, "edit_file", map[string]any{"path": "notes.txt", "old_string": "three", "new_string": "THREE"})
		want(t, "second edit", code, "")
		if got := readFile(t, filepath.Join(rw, "notes.txt")); got != "one\nTWO\nTHREE\n" {
			t.Fatalf("notes.txt = %q", got)
		}
	})
	t.Run("edit after an outside change", func(t *testing.T) {
		p := filepath.Join(rw, "changed.txt")
		_, code := c.call(t, "read_file", map[string]any{"path": "changed.txt"})
		want(t, "read", code, "")
		if err := os.WriteFile(p, []byte("changed by someone else\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, code = c.call(t, "edit_file", map[string]any{"path": "changed.txt", "old_string": "someone else", "new_string": "the model"})
		want(t, "edit changed file", code, "conflict")
		if got := readFile(t, p); got != "changed by someone else\n" {
			t.Fatalf("changed.txt was touched: %q", got)
		}
	})
	t.Run("denied on the read-only root", func(t *testing.T) {
		_, code := c.call(t, "write_file", map[string]any{"path": filepath.Join(ro, "new.txt"), "content": "x"})
		want(t, "write ro", code, "denied")
		_, code = c.call(t, "edit_file", map[string]any{"path": filepath.Join(ro, "ref.txt"), "old_string": "reference", "new_string": "x"})
		want(t, "edit ro", code, "denied")
		if _, err := os.Stat(filepath.Join(ro, "new.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("a file was created under the read-only root")
		}
		if got := readFile(t, filepath.Join(ro, "ref.txt")); got != "reference\n" {
			t.Fatalf("ref.txt = %q", got)
		}
	})
	t.Run("outside every root", func(t *testing.T) {
		for _, p := range []string{filepath.Join(dir, "outside", "secret.md"), "../outside/secret.md"} {
			_, code := c.call(t, "read_file", map[string]any{"path": p})
			want(t, "read "+p, code, "denied")
		}
	})
	t.Run("tool_search activates move_file", func(t *testing.T) {
		text, code := c.call(t, "tool_search", map[string]any{"query": "move rename file"})
		want(t, "tool_search", code, "")
		if !strings.Contains(text, "move_file") {
			t.Fatalf("tool_search = %q", text)
		}
		c.waitChanged(t)
		if c.tools(t)["move_file"] == nil {
			t.Fatal("move_file not listed after tool_search")
		}
		_, code = c.call(t, "move_file", map[string]any{"source": "move-me.txt", "destination": "moved/here.txt"})
		want(t, "move", code, "")
		if got := readFile(t, filepath.Join(rw, "moved", "here.txt")); got != "moving\n" {
			t.Fatalf("moved file = %q", got)
		}
	})
	t.Run("unknown tool is a protocol error", func(t *testing.T) {
		_, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
		if err == nil {
			t.Fatal("no protocol error")
		}
	})
}

// TestStdoutIsProtocolOnly speaks raw JSON-RPC to `capkit serve`: every
// line on stdout is a JSON-RPC message, diagnostics are on stderr, and
// SIGINT stops the server with exit code 0.
func TestStdoutIsProtocolOnly(t *testing.T) {
	dir := tree(t)
	cmd := exec.Command(capkit, "serve", "--root", filepath.Join(dir, "rw"))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	msgs := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`
	if _, err := stdin.Write([]byte(msgs)); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for id := 1; id <= 2; id++ {
		select {
		case line := <-lines:
			var m struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      int             `json:"id"`
				Result  json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil || m.JSONRPC != "2.0" || m.ID != id || m.Result == nil {
				t.Fatalf("stdout line %d is not the response: %q", id, line)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no response")
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGINT: %v (stderr %q)", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on SIGINT")
	}
	if !strings.Contains(stderr.String(), "serving MCP on stdio") {
		t.Fatalf("stderr = %q", stderr.String())
	}
}

// httpServer starts `capkit serve --http 127.0.0.1:0` with args and returns
// its endpoint and process.
func httpServer(t testing.TB, args ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(capkit, append([]string{"serve", "--http", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	url := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`serving MCP on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				url <- m[1]
			}
			t.Log("capkit: " + sc.Text())
		}
	}()
	select {
	case u := <-url:
		return u, cmd
	case <-time.After(hangGuard):
		t.Fatal("serve --http did not report its address")
	}
	return "", nil
}

// bearer adds a token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestHTTP serves a configuration file over Streamable HTTP with a bearer
// token: DNS-rebinding and token checks, the configured call budget, and
// discovery.
func TestHTTP(t *testing.T) {
	dir := tree(t)
	const token = "e2e-token-0123456789abcdef"
	tokenFile := filepath.Join(dir, "token")
	cfg := filepath.Join(dir, "capkit.toml")
	for p, s := range map[string]string{
		tokenFile: token + "\n",
		cfg: `[[root]]
path = "rw"
[[root]]
path = "ro"
read_only = true
[tool.read_file]
max_calls = 2
`,
	} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	endpoint, cmd := httpServer(t, "--config", cfg, "--token-file", tokenFile)

	t.Run("refused requests", func(t *testing.T) {
		initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
		cases := []struct {
			name   string
			header map[string]string
			host   string
			status int
		}{
			{"foreign Origin", map[string]string{"Authorization": "Bearer " + token, "Origin": "http://evil.example"}, "", http.StatusForbidden},
			{"rebinding Host", map[string]string{"Authorization": "Bearer " + token}, "evil.example", http.StatusForbidden},
			{"no token", nil, "", http.StatusUnauthorized},
			{"wrong token", map[string]string{"Authorization": "Bearer " + token + "x"}, "", http.StatusUnauthorized},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(initialize))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range c.header {
					req.Header.Set(k, v)
				}
				if c.host != "" {
					req.Host = c.host
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != c.status || resp.Header.Get("Mcp-Session-Id") != "" {
					t.Fatalf("status %d (want %d), session %q", resp.StatusCode, c.status, resp.Header.Get("Mcp-Session-Id"))
				}
			})
		}
	})

	transport := func() mcp.Transport {
		return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}
	}
	c := connect(t, transport())
	t.Run("budget exhaustion", func(t *testing.T) {
		for i := range 2 {
			_, code := c.call(t, "read_file", map[string]any{"path": "notes.txt"})
			want(t, fmt.Sprintf("read %d", i+1), code, "")
		}
		_, code := c.call(t, "read_file", map[string]any{"path": "notes.txt"})
		want(t, "read 3", code, "limit")
		// Budgets are per session.
		other := connect(t, transport())
		_, code = other.call(t, "read_file", map[string]any{"path": "notes.txt"})
		want(t, "read in another session", code, "")
	})
	t.Run("denied", func(t *testing.T) {
		_, code := c.call(t, "write_file", map[string]any{"path": filepath.Join(dir, "ro", "x.txt"), "content": "x"})
		want(t, "write ro", code, "denied")
	})
	t.Run("tool_search over HTTP", func(t *testing.T) {
		_, code := c.call(t, "tool_search", map[string]any{"query": "move"})
		want(t, "tool_search", code, "")
		c.waitChanged(t)
		if c.tools(t)["move_file"] == nil {
			t.Fatal("move_file not listed")
		}
	})
	t.Run("stops on SIGTERM", func(t *testing.T) {
		c.cs.Close()
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("exit after SIGTERM: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("serve --http did not stop on SIGTERM")
		}
	})
}

// run runs the binary and returns its exit code, stdout and stderr.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(capkit, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// TestCLI runs `capkit call` and `capkit tools` with each fault class the
// file tools can produce, and configuration errors.
func TestCLI(t *testing.T) {
	dir := tree(t)
	rw, ro := filepath.Join(dir, "rw"), filepath.Join(dir, "ro")
	cfg := filepath.Join(dir, "capkit.toml")
	if err := os.WriteFile(cfg, []byte("[[root]]\npath = \"rw\"\n[tool.read_file]\nmax_output_bytes = 32\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[[root]]\npath = \"rw\"\n\n[actor.assistant]\neffects = [\"read_file\", \"fly\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		stdin string
		args  []string
		code  int
		out   string
		err   string
	}{
		{"ok", "", []string{"call", "read_file", `{"path":"notes.txt"}`, "--root", rw}, 0, "two", ""},
		{"ok from stdin, json", `{"path":"notes.txt"}`, []string{"call", "read_file", "-", "--root", rw, "--json"}, 0, `"structured"`, ""},
		{"invalid_input", "", []string{"call", "read_file", `{"path":42}`, "--root", rw}, 2, "", "invalid_input"},
		{"not_found", "", []string{"call", "read_file", `{"path":"nope.txt"}`, "--root", rw}, 3, "", "not_found"},
		{"conflict", "", []string{"call", "edit_file", `{"path":"notes.txt","old_string":"one","new_string":"1"}`, "--root", rw}, 4, "", "conflict"},
		{"denied", "", []string{"call", "write_file", `{"path":"` + filepath.Join(ro, "x") + `","content":"x"}`, "--root", rw, "--read-only", ro}, 5, "", "denied"},
		{"limit", "", []string{"--config", cfg, "call", "read_file", `{"path":"notes.txt"}`}, 6, "", "limit"},
		{"config error names file:line:field", "", []string{"--config", bad, "call", "list_dir"}, 2, "", bad + `:5: actor.assistant.effects: unknown effect "fly"`},
		{"tools", "", []string{"tools", "--root", rw}, 0, "deferred", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(t, c.stdin, c.args...)
			if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errs, c.err) {
				t.Fatalf("exit %d (want %d)\nstdout %q\nstderr %q", code, c.code, out, errs)
			}
		})
	}
	if got := readFile(t, filepath.Join(rw, "notes.txt")); got != "one\ntwo\nthree\n" {
		t.Fatalf("notes.txt changed: %q", got)
	}
}

// hangGuard bounds every wait of these tests. It is a guard against a
// hang, not a speed assertion: far above any tool's deadline
// (limits.DefaultTimeout), so a loaded machine never fails a test that
// would pass on an idle one.
const hangGuard = 3 * time.Minute

// TestVersion: capkit version reports the module version and the VCS
// revision it was built from, never a placeholder.
func TestVersion(t *testing.T) {
	out, err := exec.Command(capkit, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	top, _ := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if st, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err != nil || !st.IsDir() {
		t.Skip("a linked worktree: the go command stamps no VCS revision there")
	}
	v := string(out)
	if strings.Contains(v, " dev") || !strings.Contains(v, "revision "+strings.TrimSpace(string(head))) {
		t.Errorf("capkit version = %q, want the revision %s", v, head)
	}
}
