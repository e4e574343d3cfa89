package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/internal/testkit/nettest"
)

// TestUpstreamEverythingHTTP: server-everything serving Streamable HTTP
// (its streamableHttp mode) on loopback, behind HTTPS on loopback (the
// test CA: capkit dials upstreams over HTTPS only), is reviewed,
// approved and called as an upstream through capkit call, dialled under
// a policy whose reviewed exception admits the loopback port; under a
// policy without it, the call fails with unavailable.
func TestUpstreamEverythingHTTP(t *testing.T) {
	t.Parallel()
	modules := upstreamServers(t)
	dir := t.TempDir()
	port := serveEverythingHTTP(t, modules)
	target, _ := url.Parse("http://127.0.0.1:" + strconv.Itoa(port))
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // event streams pass as they come
	ca := nettest.NewCA(t)
	tlsPort := ca.Serve(t, proxy, "127.0.0.1", "localhost")
	ca.WritePEM(t, dir, "ca.pem")
	for name, policy := range map[string]string{
		"policy.json": fmt.Sprintf(`{"format": 1, "ports": [%d], "private_destinations": ["127.0.0.0/8"], "ca_file": "ca.pem"}`, tlsPort),
		"strict.json": fmt.Sprintf(`{"format": 1, "ports": [%d], "ca_file": "ca.pem"}`, tlsPort),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(policy), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := func(policy string) string {
		return fmt.Sprintf(`[upstream.everything]
url = "https://localhost:%d/mcp"
policy = %q
tools = ["echo", "get-sum"]

[actor.assistant]
effects = ["upstream:everything"]
`, tlsPort, policy)
	}
	config, strict := filepath.Join(dir, "capkit.toml"), filepath.Join(dir, "strict.toml")
	os.WriteFile(config, []byte(cfg("policy.json")), 0o644)
	os.WriteFile(strict, []byte(cfg("strict.json")), 0o644) // the same lock, beside it
	if out, code := capkitCLI(t, dir, "upstream", "approve", "--config", config); code != 0 || !strings.Contains(out, "everything__echo") {
		t.Fatalf("approve over HTTP: exit %d\n%s", code, out)
	}
	out, code := capkitCLI(t, dir, "call", "everything__echo", `{"message": "over streamable http"}`, "--config", config)
	if code != 0 || !strings.Contains(out, "Echo: over streamable http") {
		t.Fatalf("call over HTTP: exit %d\n%s", code, out)
	}
	if out, code := capkitCLI(t, dir, "call", "everything__get-sum", `{"a": 2, "b": 40}`, "--config", config); code != 0 || !strings.Contains(out, "42") {
		t.Fatalf("get-sum over HTTP: exit %d\n%s", code, out)
	}
	if out, code := capkitCLI(t, dir, "call", "everything__echo", `{"message": "x"}`, "--config", strict); code == 0 || !strings.Contains(out, "unavailable") || !strings.Contains(out, "private") {
		t.Fatalf("call under a policy without the loopback exception: exit %d\n%s", code, out)
	}
}

// serveEverythingHTTP starts server-everything in its Streamable HTTP
// mode on a free loopback port and waits until it accepts connections.
func serveEverythingHTTP(t *testing.T, modules string) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "node", filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js"), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	deadline := time.Now().Add(time.Minute) // a hang guard
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			return port
		}
		if time.Now().After(deadline) || cmd.ProcessState != nil {
			t.Fatalf("server-everything streamableHttp did not listen on %d: %v\n%s", port, err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
