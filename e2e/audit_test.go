package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAuditTrail reads the audit log of one configuration used over stdio,
// over HTTP and from the CLI: every event names its actor, its session
// and its request; one MCP session's events share one session id, each
// of its calls its own request (the JSON-RPC id), and a contained
// command's event the session and request of its call; the host's
// containment notes are said once per server, not on every call.
func TestAuditTrail(t *testing.T) {
	dir := tree(t)
	audit := filepath.Join(dir, "logs", "audit.jsonl")
	if err := os.Mkdir(filepath.Join(dir, "logs"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "capkit.toml")
	writePrivate(t, cfg, `audit_log = "logs/audit.jsonl"
[[root]]
path = "rw"
[actor.assistant]
effects = ["read_file", "list", "run_shell"]
`)

	c := stdioClient(t, "--config", cfg)
	for range 2 {
		_, code := c.call(t, "read_file", map[string]any{"path": "notes.txt"})
		want(t, "read_file over stdio", code, "")
		_, code = c.call(t, "run_shell", map[string]any{"command": "true", "cwd": "."})
		want(t, "run_shell over stdio", code, "")
	}
	c.cs.Close()

	endpoint, _ := httpServer(t, "--config", cfg)
	h := connect(t, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: http.DefaultClient, MaxRetries: -1})
	_, code := h.call(t, "read_file", map[string]any{"path": "notes.txt"})
	want(t, "read_file over HTTP", code, "")
	h.cs.Close()

	if code, _, errs := run(t, "", "--config", cfg, "call", "read_file", `{"path":"notes.txt"}`); code != 0 {
		t.Fatalf("capkit call: exit %d: %s", code, errs)
	}

	events := auditEvents(t, audit)
	if len(events) != 2*3+1+1 {
		t.Fatalf("%d audit events, want 8 (4 calls and 2 contained commands over stdio, a call over HTTP, one from the CLI)", len(events))
	}
	str := func(ev map[string]any, k string) string { s, _ := ev[k].(string); return s }
	for i, ev := range events {
		if str(ev, "actor") != "assistant" || str(ev, "session") == "" || str(ev, "request") == "" {
			t.Errorf("event %d lacks its actor, session or request: %v", i, ev)
		}
	}
	stdio, httpEv, cli := events[:6], events[6], events[7]
	session := str(stdio[0], "session")
	requests := map[string]bool{}
	var contained []map[string]any
	for i, ev := range stdio {
		if str(ev, "session") != session {
			t.Errorf("stdio event %d is of session %q, want %q", i, str(ev, "session"), session)
		}
		switch str(ev, "msg") {
		case "call":
			if requests[str(ev, "request")] {
				t.Errorf("two calls of one session name request %q", str(ev, "request"))
			}
			requests[str(ev, "request")] = true
		case "contained command":
			contained = append(contained, ev)
			// The call's own event follows its contained command's.
			if next := stdio[i+1]; str(next, "tool") != "run_shell" || str(next, "request") != str(ev, "request") {
				t.Errorf("contained command of request %q, then %v", str(ev, "request"), next)
			}
		}
	}
	if len(requests) != 4 || len(contained) != 2 {
		t.Fatalf("stdio: %d requests, %d contained commands", len(requests), len(contained))
	}
	if _, said := contained[1]["notes"]; said {
		t.Errorf("the second contained command says the notes again: %v", contained[1]["notes"])
	}
	if str(httpEv, "session") == session || str(cli, "session") == session || str(cli, "session") == str(httpEv, "session") {
		t.Errorf("sessions: stdio %q, HTTP %q, CLI %q", session, str(httpEv, "session"), str(cli, "session"))
	}
	if str(cli, "request") != "capkit call" {
		t.Errorf("the CLI call's request is %q", str(cli, "request"))
	}
	line, _ := os.ReadFile(audit)
	t.Logf("audit log: %d bytes for %d events", len(line), len(events))
	for _, l := range strings.Split(strings.TrimSpace(string(line)), "\n") {
		if strings.Contains(l, "notes.txt") || strings.Contains(l, marker) {
			t.Errorf("an audit line carries arguments or content: %s", l)
		}
	}
}

// TestAuditVerify: capkit audit verify passes the trail a server wrote
// and, once a line is edited, fails with integrity (exit 9) naming the
// file and the line.
func TestAuditVerify(t *testing.T) {
	dir := tree(t)
	audit := filepath.Join(dir, "logs", "audit.jsonl")
	if err := os.Mkdir(filepath.Join(dir, "logs"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "capkit.toml")
	writePrivate(t, cfg, "audit_log = \"logs/audit.jsonl\"\n[[root]]\npath = \"rw\"\n")
	for range 3 {
		if code, _, errs := run(t, "", "--config", cfg, "call", "read_file", `{"path":"notes.txt"}`); code != 0 {
			t.Fatalf("capkit call: exit %d: %s", code, errs)
		}
	}
	code, out, errs := run(t, "", "audit", "verify", audit)
	if code != 0 || !strings.Contains(out, "ok: 3 records, last 3, head ") {
		t.Fatalf("verify: exit %d: %s%s", code, out, errs)
	}
	b, _ := os.ReadFile(audit)
	edited := strings.Replace(string(b), `"outcome":"ok"`, `"outcome":"denied"`, 2)
	lines := strings.SplitAfter(edited, "\n")
	// The first line edited back: the second is the first changed.
	lines[0] = strings.SplitAfter(string(b), "\n")[0]
	if err := os.WriteFile(audit, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "", "audit", "verify", audit)
	if code != 9 || !strings.Contains(errs, audit+" line 2 (changed)") {
		t.Fatalf("verify of an edited trail: exit %d: %s%s", code, out, errs)
	}
}
