package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// The tests here serve beyond loopback: in a network namespace the test
// makes itself, holding a veth pair with a private address, the server
// started in it with `ip netns exec` and the clients dialing from inside
// it. Nothing else is ever a target.

// nsAddr is the non-loopback address of the test's namespace.
const nsAddr = "10.213.0.1"

// nsSeq makes each namespace's name unique within the process.
var nsSeq atomic.Int64

// netns makes a network namespace with lo up and a veth pair whose first
// end holds nsAddr/24, and returns its name; it is deleted when the test
// ends. Without root, ip or network namespaces the test skips, except
// under CI=true, where it fails.
func netns(t *testing.T) string {
	t.Helper()
	unusable := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("network namespace tests: %s", why)
		}
		t.Skipf("network namespace tests: %s", why)
	}
	if os.Geteuid() != 0 {
		unusable("not root (ip netns needs CAP_SYS_ADMIN)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		unusable("ip (iproute2) is not on PATH; scripts/need-iproute2.sh installs it")
	}
	name := fmt.Sprintf("capkit-e2e-%d-%d", os.Getpid(), nsSeq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		unusable(fmt.Sprintf("ip netns add: %v: %s", err, out))
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "cap0", "type", "veth", "peer", "name", "cap1"},
		{"addr", "add", nsAddr + "/24", "dev", "cap0"},
		{"link", "set", "cap0", "up"},
		{"link", "set", "cap1", "up"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", name}, args...)...).CombinedOutput(); err != nil {
			unusable(fmt.Sprintf("ip -n %s %s: %v: %s", name, strings.Join(args, " "), err, out))
		}
	}
	return name
}

// nsClient is an HTTP client whose connections are made inside network
// namespace ns, with token as its bearer token ("" for none).
func nsClient(ns, token string) *http.Client {
	tr := &http.Transport{DialContext: nsDial(ns), DisableKeepAlives: true}
	var rt http.RoundTripper = tr
	if token != "" {
		rt = bearerOver{token, tr}
	}
	return &http.Client{Transport: rt}
}

// nsDial dials inside network namespace ns: on a goroutine locked to its
// thread, which joins the namespace and is never unlocked, so the runtime
// ends the thread with the goroutine and no other goroutine runs in the
// namespace. A socket stays in the namespace it was made in.
func nsDial(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type dialed struct {
			c   net.Conn
			err error
		}
		ch := make(chan dialed, 1)
		go func() {
			runtime.LockOSThread()
			fd, err := unix.Open(filepath.Join("/run/netns", ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				ch <- dialed{nil, err}
				return
			}
			defer unix.Close(fd)
			if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
				ch <- dialed{nil, err}
				return
			}
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			ch <- dialed{c, err}
		}()
		d := <-ch
		return d.c, d.err
	}
}

// bearerOver adds a bearer token to every request sent through next.
type bearerOver struct {
	token string
	next  http.RoundTripper
}

func (b bearerOver) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// serveIn starts `capkit serve` with args inside network namespace ns and
// returns the port it reports serving on. It fails the test when the
// server exits before it reports serving, or reports serving and then
// exits (the server must say "serving" only once it serves).
func serveIn(t *testing.T, ns string, args ...string) (port string, cmd *exec.Cmd) {
	t.Helper()
	cmd = exec.Command("ip", append([]string{"netns", "exec", ns, capkit, "serve"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	served := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`serving MCP on http://(\S+)/mcp`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log("capkit: " + sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				served <- m[1]
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	select {
	case addr := <-served:
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("serving on %q: %v", addr, err)
		}
		return port, cmd
	case err := <-exited:
		t.Fatalf("serve exited before serving: %v", err)
	case <-time.After(hangGuard):
		t.Fatal("serve --http did not report serving")
	}
	return "", nil
}

// TestHTTPBeyondLoopback serves on a non-loopback address, named and
// unspecified (0.0.0.0, the way a server is usually exposed), with a
// bearer token: a request without the token is refused with 401, one with
// it is served (initialize, tools/list, a call), and the Host and Origin
// checks accept the address the server is reached at while still refusing
// other names.
func TestHTTPBeyondLoopback(t *testing.T) {
	ns := netns(t)
	dir := tree(t)
	const token = "e2e-netns-token-0123456789abcdef"
	tokenFile := filepath.Join(dir, "token")
	cfg := filepath.Join(dir, "capkit.toml")
	writePrivate(t, tokenFile, token+"\n")
	writePrivate(t, cfg, "[[root]]\npath = \"rw\"\n")

	for _, bind := range []string{nsAddr, "0.0.0.0"} {
		t.Run(bind, func(t *testing.T) {
			port, _ := serveIn(t, ns, "--config", cfg, "--http", net.JoinHostPort(bind, "0"), "--token-file", tokenFile)
			endpoint := "http://" + net.JoinHostPort(nsAddr, port) + "/mcp"

			for _, c := range []struct {
				name, token, origin string
				host                string
				status              int
			}{
				{"no token", "", "", "", http.StatusUnauthorized},
				{"wrong token", token + "x", "", "", http.StatusUnauthorized},
				{"rebinding Host", token, "", "evil.example:" + port, http.StatusForbidden},
				{"foreign Origin", token, "http://evil.example", "", http.StatusForbidden},
				{"the server's own Origin", token, "http://" + net.JoinHostPort(nsAddr, port), "", http.StatusOK},
				{"token", token, "", "", http.StatusOK},
			} {
				t.Run(c.name, func(t *testing.T) {
					req := initializeRequest(t, endpoint)
					if c.origin != "" {
						req.Header.Set("Origin", c.origin)
					}
					if c.host != "" {
						req.Host = c.host
					}
					resp, err := nsClient(ns, c.token).Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != c.status {
						t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
					}
				})
			}

			t.Run("MCP session", func(t *testing.T) {
				c := connect(t, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: nsClient(ns, token), MaxRetries: -1})
				if c.tools(t)["read_file"] == nil {
					t.Fatal("read_file not listed")
				}
				text, code := c.call(t, "read_file", map[string]any{"path": "notes.txt"})
				if code != "" || !strings.Contains(text, "two") {
					t.Fatalf("read_file: %q %q", code, text)
				}
			})

			if bind != "0.0.0.0" {
				return // node's start-up is paid once, on the usual way to expose a server
			}
			t.Run("TypeScript client", func(t *testing.T) {
				out := runTSIn(t, nodeModules(t), tsPlan{Transport: "http", URL: endpoint, Headers: map[string]string{"Authorization": "Bearer " + token},
					Steps: []tsStep{{Op: "list"}, {Op: "call", Tool: "read_file", Args: map[string]any{"path": "notes.txt"}}}}, ns)
				if len(out.Results[0].Tools) == 0 {
					t.Fatal("no tools listed")
				}
				if res := out.Results[1]; res.IsError || res.Thrown != nil || !strings.Contains(res.Text, "two") {
					t.Fatalf("read_file: %+v", res)
				}
			})
		})
	}
}

// TestHTTPBeyondLoopbackNeedsToken: a non-loopback address without a
// token is refused before anything is served, and nothing says serving.
func TestHTTPBeyondLoopbackNeedsToken(t *testing.T) {
	ns := netns(t)
	dir := tree(t)
	cmd := exec.Command("ip", "netns", "exec", ns, capkit, "serve", "--root", filepath.Join(dir, "rw"), "--http", nsAddr+":0")
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 5 || strings.Contains(string(out), "serving MCP") || !strings.Contains(string(out), "--token-file") {
		t.Fatalf("exit %d (want 5, denied): %s", code, out)
	}
}

// initializeRequest is a raw initialize POST to endpoint.
func initializeRequest(t *testing.T, endpoint string) *http.Request {
	t.Helper()
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(initialize))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return req
}

// writePrivate writes a file readable by its owner only.
func writePrivate(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
