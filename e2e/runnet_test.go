package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/internal/testkit/nettest"
)

// netProject is a root holding a test CA's certificate, an HTTPS server
// on 127.0.0.1 with a certificate from it for localhost (the one host
// name /etc/hosts gives the real binary's resolver, so no DNS query
// leaves the machine), and a capkit.toml granting run_shell with
// [run] network: a policy listing localhost, reviewing 127.0.0.1 and the
// server's port in, and an audit log.
type netProject struct {
	config, audit, root string
	port                int
}

func newNetProject(t *testing.T) *netProject {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is missing (scripts/need-curl.sh installs it)")
		}
		t.Skip("no curl on this machine (scripts/need-curl.sh installs it)")
	}
	ca := nettest.NewCA(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello through the proxy") })
	dir := tree(t)
	p := &netProject{config: filepath.Join(dir, "capkit.toml"), audit: filepath.Join(dir, "logs", "audit.jsonl"), root: filepath.Join(dir, "rw")}
	mux.HandleFunc("/to-metadata", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	p.port = ca.Serve(t, mux, "localhost")
	ca.WritePEM(t, p.root, "ca.pem")
	mkfile(t, filepath.Join(dir, "logs", ".keep"), "")
	mkfile(t, filepath.Join(dir, "registry.json"), fmt.Sprintf(`{"format": 1, "hosts": ["localhost"], "ports": [%d], "private_destinations": ["127.0.0.1"]}`, p.port))
	writePrivate(t, p.config, `audit_log = "logs/audit.jsonl"
[[root]]
path = "rw"
[actor.assistant]
effects = ["read_file", "run_shell", "tool_search"]
[run]
network = "registry.json"
`)
	return p
}

// curl is the command line fetching path from host (on the server's
// port), extra options first.
func (p *netProject) curl(host, path, extra string) string {
	return fmt.Sprintf("curl -sS --fail --max-time 20 --cacert ca.pem %s https://%s:%d%s", extra, host, p.port, path)
}

// attempts are what a model's command tries, and what must come of it:
// "" succeeds, anything else fails with that text in the result.
func (p *netProject) attempts() []struct{ command, want string } {
	return []struct{ command, want string }{
		{p.curl("localhost", "/hello", ""), "hello through the proxy"},
		{p.curl("other.example.org", "/hello", ""), `note: the network proxy refused CONNECT other.example.org:` + fmt.Sprint(p.port) + `: destination refused: host "other.example.org" is not in the policy's "hosts"`},
		{p.curl("127.0.0.1", "/hello", ""), "admits names only"},
		{p.curl("localhost", "/to-metadata", "-L"), `note: the network proxy refused CONNECT 169.254.169.254:443`},
		{p.curl("localhost", "/hello", "--noproxy '*'"), "exit code 7"},
	}
}

// checkAudit: each proxied request is in the audit, named by host and
// outcome with its bytes and the call's session, never its path.
func (p *netProject) checkAudit(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(p.audit)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "/hello") || strings.Contains(string(raw), "meta-data") {
		t.Errorf("the audit names a path")
	}
	outcomes := map[string]int{}
	for _, ev := range auditEvents(t, p.audit) {
		if ev["msg"] != "proxied request" {
			continue
		}
		outcomes[fmt.Sprint(ev["host"], " ", ev["outcome"])]++
		if ev["actor"] != "assistant" || ev["session"] == nil || ev["request"] == nil || ev["bytes_received"] == nil {
			t.Errorf("proxied request event %v", ev)
		}
	}
	want := map[string]int{"localhost ok": 2, "other.example.org denied": 1, "127.0.0.1 denied": 1, "169.254.169.254 denied": 1}
	for k, n := range want {
		if outcomes[k] != n {
			t.Errorf("audit: %d %q events, want %d (all: %v)", outcomes[k], k, n, outcomes)
		}
	}
}

// TestRunShellNetworkOverMCP: over MCP (the Go SDK's client), run_shell
// with [run] network reaches the allowed host through the proxy; a host
// not in the policy, a raw address, a redirect to cloud metadata and a
// direct connection fail, and the result says what the proxy refused;
// the audit records each proxied request.
func TestRunShellNetworkOverMCP(t *testing.T) {
	p := newNetProject(t)
	c := stdioClient(t, "--config", p.config)
	for _, a := range p.attempts() {
		text, code := c.call(t, "run_shell", map[string]any{"command": a.command})
		want(t, a.command, code, "")
		ok := strings.HasPrefix(text, "exit code 0")
		if (a.want == "hello through the proxy") != ok || !strings.Contains(text, a.want) {
			t.Errorf("%s:\n%s\nwant it to mention %q", a.command, text, a.want)
		}
	}
	c.cs.Close()
	p.checkAudit(t)
}

// TestTypeScriptClientRunNetwork: the same through the TypeScript SDK's
// client, which checks each result (its network notes included) against
// run_shell's output schema.
func TestTypeScriptClientRunNetwork(t *testing.T) {
	modules := nodeModules(t)
	p := newNetProject(t)
	plan := tsPlan{Transport: "stdio", Command: capkit, Args: []string{"--config", p.config, "serve"}, Cwd: filepath.Dir(p.config)}
	plan.Steps = []tsStep{{Op: "list"}, {Op: "call", Tool: "tool_search", Args: map[string]any{"query": "run shell command"}}, {Op: "list"}}
	attempts := p.attempts()
	for _, a := range attempts {
		plan.Steps = append(plan.Steps, tsStep{Op: "call", Tool: "run_shell", Args: map[string]any{"command": a.command}})
	}
	out := runTS(t, modules, plan)
	checkCalls(t, plan.Steps, out)
	for i, a := range attempts {
		r := out.Results[3+i]
		if !strings.Contains(r.Text, a.want) {
			t.Errorf("%s:\n%s\nwant it to mention %q", a.command, r.Text, a.want)
		}
		var s struct{ Network []string }
		if err := json.Unmarshal(r.Structured, &s); err != nil {
			t.Fatal(err)
		}
		if refused := strings.HasPrefix(a.want, "note:") || a.want == "admits names only"; refused != (len(s.Network) > 0) {
			t.Errorf("%s: structured network %q", a.command, s.Network)
		}
	}
	p.checkAudit(t)
}
