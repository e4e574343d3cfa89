package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// actorsWorld is a configuration serving two actors over HTTP from one
// server, one token each ([http] tokens): assistant with the default file
// effects on rw and ro, reviewer reading ro only.
type actorsWorld struct {
	dir, config, audit  string
	assistant, reviewer string // the tokens
}

func newActorsWorld(t *testing.T) *actorsWorld {
	t.Helper()
	dir := tree(t)
	w := &actorsWorld{dir: dir, config: filepath.Join(dir, "capkit.toml"), audit: filepath.Join(dir, "logs", "audit.jsonl"),
		assistant: "e2e-assistant-token-0123456789", reviewer: "e2e-reviewer-token-0123456789"}
	for _, d := range []string{"secrets", "logs"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writePrivate(t, filepath.Join(dir, "secrets", "assistant"), w.assistant+"\n")
	writePrivate(t, filepath.Join(dir, "secrets", "reviewer"), w.reviewer+"\n")
	writePrivate(t, w.config, `audit_log = "logs/audit.jsonl"
[[root]]
path = "rw"
[[root]]
path = "ro"
read_only = true

[actor.assistant]

[actor.reviewer]
roots = ["ro"]
effects = ["read_file", "list"]

[http]
tokens = { assistant = "secrets/assistant", reviewer = "secrets/reviewer" }
`)
	return w
}

func (w *actorsWorld) client(t *testing.T, endpoint, token string) *client {
	t.Helper()
	return connect(t, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1})
}

// TestHTTPActors: one server, two actors. Each token's sessions have its
// actor's tools and grants and are audited as that actor; a session
// opened with one token refuses requests carrying the other; a request
// without a known token is refused.
func TestHTTPActors(t *testing.T) {
	w := newActorsWorld(t)
	endpoint, _ := httpServer(t, "--config", w.config)
	refPath := filepath.Join(w.dir, "ro", "ref.txt")

	for _, tok := range []string{"", "e2e-intruder-token-0123456789"} {
		resp, err := http.DefaultClient.Do(withToken(initializeRequest(t, endpoint), tok))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q: status %d, want 401", tok, resp.StatusCode)
		}
	}

	a := w.client(t, endpoint, w.assistant)
	if a.tools(t)["write_file"] == nil {
		t.Fatal("the assistant is not offered write_file")
	}
	if _, code := a.call(t, "write_file", map[string]any{"path": "by-assistant.txt", "content": "a\n"}); code != "" {
		t.Fatalf("the assistant's write: %s", code)
	}

	r := w.client(t, endpoint, w.reviewer)
	if tools := r.tools(t); tools["write_file"] != nil || tools["read_file"] == nil {
		t.Fatalf("the reviewer's tools: %v", keys(tools))
	}
	if text, code := r.call(t, "read_file", map[string]any{"path": refPath}); code != "" || !strings.Contains(text, "reference") {
		t.Fatalf("the reviewer's read: %s %q", code, text)
	}
	_, code := r.call(t, "write_file", map[string]any{"path": filepath.Join(w.dir, "rw", "by-reviewer.txt"), "content": "r\n"})
	want(t, "the reviewer's write", code, "denied")
	_, code = r.call(t, "read_file", map[string]any{"path": filepath.Join(w.dir, "rw", "notes.txt")})
	want(t, "the reviewer's read outside its roots", code, "denied")

	t.Run("a session refuses the other token", func(t *testing.T) {
		resp, err := http.DefaultClient.Do(withToken(initializeRequest(t, endpoint), w.assistant))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		session := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || session == "" {
			t.Fatalf("initialize: status %d, session %q", resp.StatusCode, session)
		}
		post := func(token, body string) (int, string) {
			req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			req.Header.Set("Mcp-Session-Id", session)
			resp, err := http.DefaultClient.Do(withToken(req, token))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(data)
		}
		post(w.assistant, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.txt"}}}`
		if status, body := post(w.reviewer, call); status != http.StatusForbidden || strings.Contains(body, "two") {
			t.Fatalf("the reviewer on the assistant's session: status %d, body %q", status, body)
		}
		if status, body := post(w.assistant, call); status != http.StatusOK || !strings.Contains(body, "two") {
			t.Fatalf("the assistant on its session: status %d, body %q", status, body)
		}
	})

	t.Run("audited as each actor", func(t *testing.T) {
		byActor := map[string]map[string]int{}
		for _, ev := range auditEvents(t, w.audit) {
			actor, _ := ev["actor"].(string)
			tool, _ := ev["tool"].(string)
			if byActor[actor] == nil {
				byActor[actor] = map[string]int{}
			}
			byActor[actor][tool+" "+ev["outcome"].(string)]++
		}
		if byActor["assistant"]["write_file ok"] != 1 || byActor["reviewer"]["write_file denied"] != 1 || byActor["reviewer"]["read_file ok"] != 1 || byActor["reviewer"]["read_file denied"] != 1 ||
			byActor["assistant"]["read_file ok"] != 1 || len(byActor) != 2 {
			t.Fatalf("audit by actor: %v", byActor)
		}
	})

	t.Run("TypeScript client", func(t *testing.T) {
		modules := nodeModules(t)
		out := runTS(t, modules, tsPlan{Transport: "http", URL: endpoint, Headers: map[string]string{"Authorization": "Bearer " + w.reviewer},
			Steps: []tsStep{{Op: "list"}, {Op: "call", Tool: "read_file", Args: map[string]any{"path": refPath}}}})
		listed := map[string]bool{}
		for _, tl := range out.Results[0].Tools {
			listed[tl.Name] = true
		}
		if !listed["read_file"] || listed["write_file"] {
			t.Fatalf("the reviewer's tools over the TypeScript client: %v", listed)
		}
		if res := out.Results[1]; res.IsError || res.Thrown != nil || !strings.Contains(res.Text, "reference") {
			t.Fatalf("read_file over the TypeScript client: %+v", res)
		}
	})
}

// withToken sets req's bearer token ("" leaves it without).
func withToken(req *http.Request, token string) *http.Request {
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

// auditEvents are the audit log's events, one JSON object a line.
func auditEvents(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Event map[string]any `json:"event"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Event == nil {
			t.Fatalf("audit line is not a record: %q", sc.Text())
		}
		out = append(out, rec.Event)
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
