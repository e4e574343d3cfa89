package e2e

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/internal/testkit/otlptest"
)

// TestTelemetry: capkit serve with [telemetry] otlp_endpoint exports a
// span per call, and the call and denial metrics, to a collector of the
// test's own (through capkit-otel); no argument value sent in the calls
// is in any export.
func TestTelemetry(t *testing.T) {
	col := otlptest.Start(t)
	dir := tree(t)
	cfg := filepath.Join(dir, "capkit.toml")
	writePrivate(t, cfg, fmt.Sprintf("[[root]]\npath = \"rw\"\n[actor.assistant]\neffects = [\"read_file\", \"list\"]\n[telemetry]\notlp_endpoint = %q\n", col.URL()))
	const secret = "SECRET_ARGUMENT_6210"
	c := stdioClient(t, "--config", cfg)
	c.call(t, "read_file", map[string]any{"path": "notes.txt"})
	c.call(t, "read_file", map[string]any{"path": secret + ".txt"})
	c.call(t, "write_file", map[string]any{"path": "x.txt", "content": secret})
	c.cs.Close() // the server exits, and its exporter exports what is pending

	spans := col.Spans()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	outcomes := map[string]string{}
	for _, sp := range spans {
		a := otlptest.Attrs(sp.Attributes)
		outcomes[fmt.Sprint(a["mcp.tool.name"])] += fmt.Sprint(a["capkit.outcome"], ",")
		if a["capkit.actor"] != "assistant" || a["mcp.session.id"] == nil || a["jsonrpc.request.id"] == nil {
			t.Errorf("span %s: %v", sp.Name, a)
		}
	}
	if outcomes["read_file"] != "ok,not_found," && outcomes["read_file"] != "not_found,ok," || outcomes["write_file"] != "denied," {
		t.Errorf("outcomes %v", outcomes)
	}
	if n, _ := col.Sum("mcp.tool.calls", "", ""); n != 3 {
		t.Errorf("mcp.tool.calls %d", n)
	}
	if n, _ := col.Sum("capkit.denials", "capkit.policy", "grant:write_file"); n != 1 {
		t.Errorf("capkit.denials{grant:write_file} %d", n)
	}
	for _, b := range col.Bodies() {
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte("notes.txt")) {
			t.Fatal("an export holds an argument value")
		}
	}
}

// TestTelemetryCollectorAway: capkit serve answers every call while the
// collector is away (nothing listens) or answers no export (held), and
// exits when its client goes.
func TestTelemetryCollectorAway(t *testing.T) {
	held := otlptest.Start(t)
	held.Hold()
	for name, endpoint := range map[string]string{"away": otlptest.Unreachable(t), "held": held.URL()} {
		t.Run(name, func(t *testing.T) {
			dir := tree(t)
			cfg := filepath.Join(dir, "capkit.toml")
			writePrivate(t, cfg, fmt.Sprintf("[[root]]\npath = \"rw\"\n[actor.assistant]\neffects = [\"read_file\"]\n[telemetry]\notlp_endpoint = %q\n", endpoint))
			c := stdioClient(t, "--config", cfg)
			for i := range 300 {
				if text, code := c.call(t, "read_file", map[string]any{"path": "notes.txt"}); code != "" || !strings.Contains(text, "three") {
					t.Fatalf("call %d: %q %q", i, code, text)
				}
			}
			if err := c.cs.Close(); err != nil {
				t.Errorf("the server's exit: %v", err)
			}
		})
	}
}
