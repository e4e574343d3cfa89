package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The TypeScript SDK suite: e2e/tsclient/drive.mjs drives the real binary
// with the MCP TypeScript SDK's client (the one Claude Desktop, Claude Code
// and the Inspector use), which checks structuredContent against a tool's
// output schema whenever the tool was listed with one, failures included.
// scripts/need-node-sdk.sh installs the pinned SDK and Inspector.

// nodeModules is the folder holding the pinned node modules, or "" with
// the reason they cannot be used. Under CI=true a missing one fails the
// test; elsewhere it skips.
func nodeModules(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CAPKIT_NODE_MODULES")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "capkit-node", "node_modules")
	}
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH"
	} else if _, err := os.Stat(filepath.Join(dir, "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		missing = "the MCP TypeScript SDK is not installed in " + dir + " (run scripts/need-node-sdk.sh)"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("TypeScript client suite: %s", missing)
		}
		t.Skipf("TypeScript client suite: %s", missing)
	}
	return dir
}

// tsPlan is what drive.mjs runs.
type tsPlan struct {
	Transport string   `json:"transport"`
	Command   string   `json:"command,omitempty"`
	Args      []string `json:"args,omitempty"`
	Cwd       string   `json:"cwd,omitempty"`
	URL       string   `json:"url,omitempty"`
	Roots     []string `json:"roots,omitempty"`
	Steps     []tsStep `json:"steps"`
	// Elicit are the client's answers to elicitations, in turn; set, the
	// client declares form elicitation.
	Elicit []map[string]any `json:"elicit,omitempty"`

	// Headers go with every HTTP request (a bearer token).
	Headers map[string]string `json:"headers,omitempty"`
}

type tsStep struct {
	Op      string         `json:"op"`
	Tool    string         `json:"tool,omitempty"`
	Args    map[string]any `json:"args,omitempty"`
	AfterMS int            `json:"after_ms,omitempty"`
	Min     int            `json:"min,omitempty"`
	// More is changes': this many more than the previous changes step saw.
	More  int      `json:"more,omitempty"`
	Roots []string `json:"roots,omitempty"`
	// OffsetArg and Next are follow's: the argument a window's next
	// offset is passed in, and the structured field that gives it.
	OffsetArg string `json:"offset_arg,omitempty"`
	Next      string `json:"next,omitempty"`
	// Progress asks call for progress notifications and counts them.
	Progress bool `json:"progress,omitempty"`

	want string // the fault code a call must fail with; "" for success
}

// tsOutput is what drive.mjs prints.
type tsOutput struct {
	Instructions string   `json:"instructions"`
	Elicited     []string `json:"elicited"`
	Results      []struct {
		Op    string `json:"op"`
		Tool  string `json:"tool"`
		Tools []struct {
			Name         string `json:"name"`
			Title        string `json:"title"`
			OutputSchema bool   `json:"output_schema"`
		} `json:"tools"`
		Bytes      int             `json:"bytes"`
		IsError    bool            `json:"is_error"`
		Text       string          `json:"text"`
		Types      []string        `json:"types"`
		Progress   int             `json:"progress"`
		Meta       map[string]any  `json:"meta"`
		Structured json.RawMessage `json:"structured"`
		Thrown     *struct {
			Code    *int   `json:"code"`
			Name    string `json:"name"`
			Message string `json:"message"`
		} `json:"thrown"`
		ListChanged int        `json:"list_changed"`
		SessionID   string     `json:"session_id"`
		Pages       []tsResult `json:"pages"`
	} `json:"results"`
}

// tsResult is one tools/call result as drive.mjs prints it.
type tsResult struct {
	IsError    bool            `json:"is_error"`
	Text       string          `json:"text"`
	Structured json.RawMessage `json:"structured"`
	Thrown     *struct {
		Message string `json:"message"`
	} `json:"thrown"`
}

// runTS runs drive.mjs with plan and returns what it printed.
func runTS(t *testing.T, modules string, plan tsPlan) *tsOutput {
	t.Helper()
	return runTSIn(t, modules, plan, "")
}

// runTSIn is runTS with node run inside network namespace ns ("" for
// this process's own).
func runTSIn(t *testing.T, modules string, plan tsPlan, ns string) *tsOutput {
	t.Helper()
	// Node resolves an ES module's imports next to the script, so the
	// script runs from a folder whose node_modules is the pinned one.
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("tsclient", "drive.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "drive.mjs"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	in, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a hang guard
	defer cancel()
	argv := []string{"node", filepath.Join(dir, "drive.mjs")}
	if ns != "" {
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("drive.mjs: %v\nstderr: %s\nstdout: %.2000s", err, stderr.String(), stdout.String())
	}
	var out tsOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("drive.mjs printed no JSON: %v\n%.2000s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if len(out.Results) != len(plan.Steps) {
		t.Fatalf("%d results for %d steps", len(out.Results), len(plan.Steps))
	}
	return &out
}

// tsWorld is the tree and configuration the suite serves: every effect
// on rw (writable) and ro (read-only), a catalog, run_script, and small
// bounds so limit failures are cheap to provoke.
type tsWorld struct {
	dir, rw, ro, config string
}

const tsCSV = "name,n\nx,1\ny,2\n"

func newTSWorld(t *testing.T) *tsWorld {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &tsWorld{dir: dir, rw: filepath.Join(dir, "rw"), ro: filepath.Join(dir, "ro"), config: filepath.Join(dir, "capkit.toml")}
	for p, s := range map[string]string{
		"rw/notes.txt":     "one\ntwo\nthree\n",
		"rw/unread.txt":    "never read\n",
		"rw/move-me.txt":   "moving\n",
		"rw/data.csv":      tsCSV,
		"rw/page.html":     "<html><body><p>hello page</p></body></html>",
		"rw/feed.xml":      `<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item><title>i</title><link>http://example.com/i</link></item></channel></rss>`,
		"rw/stage/f.txt":   "staged\n",
		"rw/stage2/f.txt":  "staged\n",
		"rw/taken/f.txt":   "taken\n",
		"rw/jdir/.keep":    "",
		"rw/sub/inner.txt": "inner\n",
		"ro/ref.txt":       "reference\n",
		"cat/a.txt":        "catalog entry a\n",
	} {
		mkfile(t, filepath.Join(dir, p), s)
	}
	if err := os.Chmod(filepath.Join(w.rw, "jdir"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := `client_roots = "narrow"
[[root]]
path = "rw"
[[root]]
path = "ro"
read_only = true
[actor.assistant]
effects = ["read_file", "write_file", "edit_file", "move_file", "list", "search", "parse", "tool_search",
  "state_write", "archive_read", "archive_write", "journal_read", "journal_write", "catalog_read", "run_script"]
resources = ["notes"]
[catalog.notes]
[catalog.notes.entries]
"a" = "cat/a.txt"
[script]
enabled = true
max_steps = 100000000
timeout = "60s"
[tool.write_file]
max_input_bytes = 2048
[tool.notes]
max_calls = 3
`
	if err := os.WriteFile(w.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

func hexSHA(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// discovery activates every deferred tool with tool_search (whole words,
// at most 12 a search) and lists again, which arms the client's output
// check for them too.
func discovery() []tsStep {
	var steps []tsStep
	for _, q := range []string{
		"move copy digest stamp tree", "several info create directory passages literal", "state publish zip", "journal",
		"json text csv validate canonical", "html feed sniff", "notes script",
	} {
		steps = append(steps, tsStep{Op: "call", Tool: "tool_search", Args: map[string]any{"query": q, "limit": 12}})
	}
	return append(steps, tsStep{Op: "changes", Min: 1}, tsStep{Op: "list"})
}

// toolCalls are calls of every tool, in success and in each failure this
// configuration can provoke, in an order whose earlier calls set up the
// later ones (a read before an edit, an archive before its listing).
func (w *tsWorld) toolCalls() []tsStep {
	c := func(tool, want string, args map[string]any) tsStep {
		return tsStep{Op: "call", Tool: tool, Args: args, want: want}
	}
	type m = map[string]any
	outside := filepath.Join(w.dir, "cat", "a.txt")
	roRef := filepath.Join(w.ro, "ref.txt")
	csvSum := m{"data.csv": hexSHA(tsCSV)}
	return []tsStep{
		c("read_file", "", m{"path": "notes.txt"}),
		c("read_file", "", m{"path": roRef}),
		c("read_file", "not_found", m{"path": "missing.txt"}),
		c("read_file", "denied", m{"path": outside}),
		c("read_file", "invalid_input", m{"path": "notes.txt", "offset": -1}),
		c("read_file", "invalid_input", m{"path": "~/notes.txt"}),
		c("write_file", "", m{"path": "new.txt", "content": "new\n"}),
		c("write_file", "conflict", m{"path": "unread.txt", "content": "overwrite\n"}),
		c("write_file", "denied", m{"path": filepath.Join(w.ro, "x.txt"), "content": "x"}),
		c("write_file", "limit", m{"path": "big.txt", "content": strings.Repeat("b", 4096)}),
		c("write_file", "denied", m{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
		// Protected, not "read it first": a model is not sent to read and retry.
		c("edit_file", "denied", m{"path": ".git/config", "old_string": "a", "new_string": "b"}),
		c("create_directory", "denied", m{"path": ".git/hooks"}),
		c("edit_file", "", m{"path": "notes.txt", "old_string": "two", "new_string": "TWO"}),
		c("edit_file", "conflict", m{"path": "unread.txt", "old_string": "never", "new_string": "now"}),
		c("edit_file", "invalid_input", m{"path": "notes.txt", "old_string": "absent", "new_string": "x"}),
		c("edit_file", "not_found", m{"path": "missing.txt", "old_string": "a", "new_string": "b"}),
		c("edit_file", "denied", m{"path": roRef, "old_string": "reference", "new_string": "x"}),
		c("list_dir", "", m{}),
		c("list_dir", "", m{"path": w.ro}),
		c("list_dir", "not_found", m{"path": "nope"}),
		c("list_dir", "denied", m{"path": filepath.Join(w.dir, "cat")}),
		c("glob", "", m{"pattern": "**/*.txt"}),
		c("glob", "invalid_input", m{"pattern": "[unclosed"}),
		c("glob", "denied", m{"pattern": "*", "path": filepath.Join(w.dir, "cat")}),
		c("grep", "", m{"pattern": "one"}),
		c("grep", "invalid_input", m{"pattern": "(unclosed"}),
		c("grep", "not_found", m{"pattern": "x", "path": "nope"}),
		c("passages_find", "", m{"path": "notes.txt", "query": "one"}),
		c("passages_find", "not_found", m{"path": "missing.txt", "query": "one"}),
		c("passages_find", "denied", m{"path": filepath.Join(w.dir, "cat", "a.txt"), "query": "a"}),
		c("list_roots", "", m{}),
		c("move_file", "", m{"source": "move-me.txt", "destination": "moved.txt"}),
		c("move_file", "conflict", m{"source": "moved.txt", "destination": "notes.txt"}),
		c("move_file", "not_found", m{"source": "missing.txt", "destination": "x.txt"}),
		c("move_file", "denied", m{"source": "moved.txt", "destination": filepath.Join(w.ro, "moved.txt")}),
		c("read_files", "", m{"files": []m{{"path": "notes.txt"}, {"path": roRef}}}),
		c("read_files", "invalid_input", m{"files": []m{}}),
		c("dir_tree", "", m{}),
		c("dir_tree", "not_found", m{"path": "missing"}),
		c("dir_tree", "denied", m{"path": filepath.Join(w.dir, "cat")}),
		c("file_info", "", m{"path": "notes.txt"}),
		c("file_info", "not_found", m{"path": "missing.txt"}),
		c("create_directory", "", m{"path": "made/deeper"}),
		c("create_directory", "denied", m{"path": filepath.Join(w.ro, "made")}),
		c("create_directory", "invalid_input", m{"path": "notes.txt"}),
		c("create_directory", "not_found", m{"path": "notes.txt/x"}),
		c("text_validate", "", m{"text": "hello\n"}),
		c("text_validate", "invalid_input", m{}),
		c("text_validate", "not_found", m{"path": "missing.txt"}),
		c("json_validate", "", m{"text": `{"a": [1, 2]}`}),
		c("json_validate", "invalid_input", m{"text": `{"a": 1, "a": 2}`}),
		c("json_canonical", "", m{"text": `{"b": 1, "a": 2}`}),
		c("json_canonical", "invalid_input", m{"text": `[1,`}),
		c("csv_scan", "", m{"path": "data.csv"}),
		c("csv_scan", "not_found", m{"path": "missing.csv"}),
		c("csv_scan", "invalid_input", m{"path": "data.csv", "text": "a,b\n"}),
		c("html_extract", "", m{"path": "page.html", "select": "text"}),
		c("html_extract", "invalid_input", m{"text": "<p>x</p>", "select": "everything"}),
		c("feed_parse", "", m{"path": "feed.xml", "url": "http://example.com/", "limit": 5}),
		c("feed_parse", "invalid_input", m{"text": "not a feed", "url": "http://example.com/", "limit": 5}),
		c("sniff", "", m{"path": "feed.xml", "expect": "feed"}),
		c("sniff", "invalid_input", m{"text": "x", "expect": "spreadsheet"}),
		c("file_digest", "", m{"path": "notes.txt"}),
		c("file_digest", "not_found", m{"path": "missing.txt"}),
		c("file_copy", "", m{"source": "notes.txt", "destination": "copy.txt"}),
		c("file_copy", "conflict", m{"source": "notes.txt", "destination": "copy.txt"}),
		c("file_copy", "not_found", m{"source": "missing.txt", "destination": "copy2.txt"}),
		c("file_copy", "denied", m{"source": "notes.txt", "destination": "capkit.toml"}),
		c("tree_stamp", "", m{"path": "notes.txt"}),
		c("tree_stamp", "not_found", m{"path": "missing.txt"}),
		c("tree_list", "", m{"path": "sub"}),
		c("tree_list", "not_found", m{"path": "missing"}),
		c("state_replace", "", m{"path": "state.json", "content": "{}"}),
		c("state_replace", "denied", m{"path": filepath.Join(w.ro, "state.json"), "content": "{}"}),
		c("dir_publish", "", m{"staging": "stage", "destination": "published"}),
		c("dir_publish", "conflict", m{"staging": "stage2", "destination": "taken"}),
		c("dir_publish", "not_found", m{"staging": "missing", "destination": "p2"}),
		c("zip_create", "", m{"archive": "a.zip", "files": []string{"data.csv"}}),
		c("zip_create", "conflict", m{"archive": "a.zip", "files": []string{"data.csv"}}),
		c("zip_create", "not_found", m{"archive": "b.zip", "files": []string{"missing.txt"}}),
		c("zip_list", "", m{"archive": "a.zip"}),
		c("zip_list", "not_found", m{"archive": "missing.zip"}),
		c("zip_verify", "", m{"archive": "a.zip", "expect": csvSum}),
		c("zip_verify", "integrity", m{"archive": "a.zip", "expect": m{"data.csv": hexSHA("other")}}),
		c("zip_extract", "", m{"archive": "a.zip", "destination": "unzipped", "expect": csvSum}),
		c("zip_extract", "conflict", m{"archive": "a.zip", "destination": "unzipped", "expect": csvSum}),
		c("journal_append", "", m{"dir": "jdir", "name": "log", "event": m{"n": 1}}),
		c("journal_append", "invalid_input", m{"dir": "jdir", "name": "../log", "event": 1}),
		c("journal_read", "", m{"dir": "jdir", "name": "log"}),
		c("journal_verify", "", m{"dir": "jdir", "name": "log"}),
		c("journal_verify", "not_found", m{"dir": "jdir", "name": "nope"}),
		c("notes", "", m{"id": "a"}),
		c("notes", "not_found", m{"id": "b"}),
		c("notes", "", m{"id": "a"}),
		c("notes", "limit", m{"id": "a"}), // past the configured budget of 3 calls
		c("run_script", "", m{"source": `result = tool.call("list_roots", {})`}),
		c("run_script", "invalid_input", m{"source": "result = ("}),
		c("tool_search", "", m{"query": "x"}),
	}
}

// checkCalls asserts on every call step: a success is a result that
// passed the client's output-schema check; a failure is an isError result
// (never an exception from callTool) whose text is "code: message", whose
// _meta["capkit/fault"] carries the same code, and which has no
// structuredContent.
func checkCalls(t *testing.T, steps []tsStep, out *tsOutput) {
	t.Helper()
	for i, s := range steps {
		r := out.Results[i]
		if s.Op != "call" {
			continue
		}
		what := fmt.Sprintf("step %d %s %v", i, s.Tool, s.Args)
		if len(what) > 200 {
			what = what[:200]
		}
		if r.Thrown != nil {
			t.Errorf("%s: callTool threw %s", what, r.Thrown.Message)
			continue
		}
		if s.want == "" {
			if r.IsError {
				t.Errorf("%s: failed: %s", what, r.Text)
			}
			continue
		}
		fault, _ := r.Meta["capkit/fault"].(map[string]any)
		switch {
		case !r.IsError:
			t.Errorf("%s: succeeded, want %s: %.300s", what, s.want, r.Text)
		case fault["code"] != s.want:
			t.Errorf("%s: _meta fault %v, want code %s (text %q)", what, fault, s.want, r.Text)
		case !strings.HasPrefix(r.Text, s.want+": ") || fault["message"] == "":
			t.Errorf("%s: text %q does not start with the code", what, r.Text)
		case len(r.Structured) > 0 && string(r.Structured) != "null":
			t.Errorf("%s: a failure carries structuredContent %s", what, r.Structured)
		}
	}
}

// TestTypeScriptClient drives every tool over stdio and Streamable HTTP
// with the TypeScript SDK's client: discovery, success and every failure,
// the roots the model is told, a cancelled call, and (over HTTP) the
// session's lifecycle.
func TestTypeScriptClient(t *testing.T) {
	modules := nodeModules(t)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			w := newTSWorld(t)
			plan := tsPlan{Transport: transport}
			if transport == "stdio" {
				plan.Command, plan.Args, plan.Cwd = capkit, []string{"--config", w.config, "serve"}, w.dir
			} else {
				plan.URL, _ = httpServer(t, "--config", w.config)
			}
			plan.Steps = append([]tsStep{{Op: "list"}}, discovery()...)
			nDiscovery := len(plan.Steps)
			plan.Steps = append(plan.Steps, w.toolCalls()...)
			plan.Steps = append(plan.Steps,
				tsStep{Op: "call", Tool: "tool_search", Args: map[string]any{"query": "read file", "limit": 50}},
				// Abandoned work: a script that would run for a long time,
				// aborted by the client; the next call is answered.
				tsStep{Op: "cancel", Tool: "run_script", AfterMS: 300, Args: map[string]any{
					"source": "x = 0\nfor i in range(90000000):\n    x += i\nresult = x"}},
				tsStep{Op: "call", Tool: "list_roots"},
			)
			if transport == "http" {
				plan.Steps = append(plan.Steps, tsStep{Op: "session"}, tsStep{Op: "terminate"})
			}
			out := runTS(t, modules, plan)
			called := map[string]bool{}
			for _, s := range plan.Steps {
				if s.Op == "call" {
					called[s.Tool] = true
				}
			}
			checkDiscovery(t, out, nDiscovery, called)
			checkCalls(t, plan.Steps, out)
			checkTail(t, w, plan, out)
		})
	}
}

// checkDiscovery: the first list has the hot tools, each with a title;
// after the searches, one list_changed at least and every tool listed,
// the tools listed being those the suite calls.
func checkDiscovery(t *testing.T, out *tsOutput, n int, called map[string]bool) {
	t.Helper()
	first := out.Results[0].Tools
	names := map[string]bool{}
	for _, tl := range first {
		names[tl.Name] = true
		if tl.Title == "" || !tl.OutputSchema {
			t.Errorf("%s: title %q, output schema %v", tl.Name, tl.Title, tl.OutputSchema)
		}
	}
	for _, hot := range []string{"read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "list_roots", "tool_search"} {
		if !names[hot] {
			t.Errorf("first tools/list lacks %s", hot)
		}
	}
	if out.Results[n-2].ListChanged == 0 {
		t.Error("no notifications/tools/list_changed after tool_search")
	}
	// After discovery every granted tool is listed, and the suite calls
	// each one: a tool added to capkit without a case here fails.
	all := out.Results[n-1].Tools
	listed := map[string]bool{}
	for _, tl := range all {
		listed[tl.Name] = true
		if !called[tl.Name] {
			t.Errorf("%s is listed but the suite never calls it: add its cases to toolCalls", tl.Name)
		}
	}
	for name := range called {
		if !listed[name] {
			t.Errorf("%s is called but not listed after discovery", name)
		}
	}
	for _, tl := range all {
		if tl.Title == "" {
			t.Errorf("%s has no title", tl.Name)
		}
	}
}

// checkTail checks what follows the tool calls: roots in the
// instructions, the search of listed tools, the cancelled call, and the
// HTTP session's end.
func checkTail(t *testing.T, w *tsWorld, plan tsPlan, out *tsOutput) {
	t.Helper()
	for _, s := range []string{"- " + w.rw + " (read-write)", "- " + w.ro + " (read-only", "relative paths start at the first, " + w.rw} {
		if !strings.Contains(out.Instructions, s) {
			t.Errorf("instructions lack %q: %q", s, out.Instructions)
		}
	}
	i := len(plan.Steps) - 3
	if plan.Transport == "http" {
		i -= 2
	}
	search, cancelled, after := out.Results[i], out.Results[i+1], out.Results[i+2]
	if strings.Contains(search.Text, "now available") || !strings.Contains(search.Text, "already in your tool list:\nread_file") ||
		!strings.Contains(search.Text, "limit 50 is outside 1..12; 12 was used") {
		t.Errorf("search of listed tools: %q", search.Text)
	}
	if cancelled.Thrown == nil || !strings.Contains(cancelled.Thrown.Message, "Abort") {
		t.Errorf("cancelled call: %+v (text %.200q)", cancelled.Thrown, cancelled.Text)
	}
	if after.Thrown != nil || after.IsError || !strings.Contains(after.Text, w.rw) {
		t.Errorf("call after the cancelled one: %+v %q", after.Thrown, after.Text)
	}
	if plan.Transport != "http" {
		return
	}
	id := out.Results[len(out.Results)-2].SessionID
	if id == "" || out.Results[len(out.Results)-1].SessionID != "" {
		t.Fatalf("session id %q, after terminate %q", id, out.Results[len(out.Results)-1].SessionID)
	}
	// The session is gone: a request naming it is refused.
	req, _ := http.NewRequest("POST", plan.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a request of the terminated session: HTTP %d, want 404", resp.StatusCode)
	}
}

// TestTypeScriptClientRoots: a client that offers roots narrows the
// session (client_roots = "narrow"), never widens it, over stdio and HTTP.
func TestTypeScriptClientRoots(t *testing.T) {
	modules := nodeModules(t)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			w := newTSWorld(t)
			sub := filepath.Join(w.rw, "sub")
			plan := tsPlan{Transport: transport, Roots: []string{"file://" + sub}}
			if transport == "stdio" {
				plan.Command, plan.Args, plan.Cwd = capkit, []string{"--config", w.config, "serve"}, w.dir
			} else {
				plan.URL, _ = httpServer(t, "--config", w.config)
			}
			plan.Steps = []tsStep{
				{Op: "list"},
				{Op: "call", Tool: "list_roots"},
				{Op: "call", Tool: "read_file", Args: map[string]any{"path": "inner.txt"}},
				{Op: "call", Tool: "read_file", Args: map[string]any{"path": filepath.Join(w.rw, "notes.txt")}, want: "denied"},
				{Op: "call", Tool: "read_file", Args: map[string]any{"path": filepath.Join(w.ro, "ref.txt")}, want: "denied"},
				{Op: "set_roots", Roots: []string{"file:///"}},
				{Op: "call", Tool: "list_roots"},
				{Op: "call", Tool: "read_file", Args: map[string]any{"path": filepath.Join(w.dir, "cat", "a.txt")}, want: "denied"},
			}
			out := runTS(t, modules, plan)
			checkCalls(t, plan.Steps, out)
			if got := out.Results[1].Text; !strings.Contains(got, "- "+sub+" (read-write)") || strings.Contains(got, w.ro) {
				t.Errorf("narrowed list_roots: %q", got)
			}
			if got := out.Results[6].Text; !strings.Contains(got, "- "+w.rw+" (read-write)") || !strings.Contains(got, "- "+w.ro+" (read-only") || strings.Contains(got, "- / ") {
				t.Errorf("list_roots after a wider client root: %q", got)
			}
		})
	}
}

// TestInspectorCLI runs the MCP Inspector's command-line mode against the
// binary: tools/list, and one tools/call.
func TestInspectorCLI(t *testing.T) {
	modules := nodeModules(t)
	bin := filepath.Join(modules, ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the Inspector is not installed in %s (run scripts/need-node-sdk.sh)", modules)
		}
		t.Skipf("the Inspector is not installed in %s (run scripts/need-node-sdk.sh)", modules)
	}
	w := newTSWorld(t)
	// inspect runs the Inspector; it exits non-zero when the tool result is
	// an error, which fails must say.
	inspect := func(fails bool, args ...string) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
		defer cancel()
		// The Inspector takes --config for itself: the server gets flags.
		cmd := exec.CommandContext(ctx, bin, append([]string{"--cli", capkit, "serve", "--root", w.rw, "--read-only", w.ro}, args...)...)
		cmd.Dir = w.dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); (err != nil) != fails {
			t.Fatalf("inspector %v: %v\nstdout: %.2000s\nstderr: %.2000s", args, err, stdout.String(), stderr.String())
		}
		var v map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
			t.Fatalf("inspector %v printed no JSON: %v\n%.2000s", args, err, stdout.String())
		}
		return v
	}
	list := inspect(false, "--method", "tools/list")
	tools, _ := list["tools"].([]any)
	found := false
	for _, tl := range tools {
		if m, _ := tl.(map[string]any); m["name"] == "read_file" && m["title"] == "Read file" {
			found = true
		}
	}
	if !found {
		t.Fatalf("tools/list through the Inspector lacks read_file with its title: %v", list)
	}
	res := inspect(false, "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=notes.txt")
	if data, _ := json.Marshal(res); !strings.Contains(string(data), "three") || res["isError"] == true {
		t.Fatalf("tools/call through the Inspector: %s", data)
	}
	failed := inspect(true, "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=missing.txt")
	if data, _ := json.Marshal(failed); !strings.Contains(string(data), "not_found: ") || failed["isError"] != true {
		t.Fatalf("a failed call through the Inspector: %s", data)
	}
}
