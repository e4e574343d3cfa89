package run

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/internal/testkit/nettest"
	"github.com/capkit/capkit/net/budget"
	"github.com/capkit/capkit/net/egress"
	"github.com/capkit/capkit/net/fetch"
)

// getArg makes the test binary a small Go HTTP client inside the
// container: getArg URL CAFILE [direct] GETs URL through the proxy the
// environment names (or, with direct, ignoring it), trusting CAFILE, and
// prints the body, or the error with exit code 1.
const getArg = "__get"

func TestMain(m *testing.M) {
	if len(os.Args) >= 4 && os.Args[1] == getArg {
		os.Exit(get(os.Args[2], os.Args[3], len(os.Args) > 4))
	}
	// What a command leaves at a protected name goes to the quarantine
	// in the user's state directory: a temporary one here.
	state, err := os.MkdirTemp("", "capkit-run-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}

func get(url, caFile string, direct bool) int {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: &tls.Config{RootCAs: pool}}
	if direct {
		tr.Proxy = nil
	}
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s\n", resp.StatusCode, b)
	return 0
}

// netWorld is an HTTPS server on 127.0.0.1 that a test DNS server names
// registry.example.org (in the policy's hosts), other.example.org (not)
// and internal.example.org (in hosts, resolving to 10.1.2.3, which the
// guard refuses), a proxy for it, and a writable root holding the test
// CA; client is the Go client's directory, shown read-only.
type netWorld struct {
	root, client string
	port         int
	proxy        *egress.Proxy
	audit        *bytes.Buffer
	mu           sync.Mutex
}

func newNetWorld(t *testing.T, b *budget.Budget) *netWorld {
	t.Helper()
	ca := nettest.NewCA(t)
	w := &netWorld{root: t.TempDir(), client: t.TempDir(), audit: &bytes.Buffer{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(rw http.ResponseWriter, r *http.Request) { fmt.Fprint(rw, "hello through the proxy") })
	mux.HandleFunc("/to-internal", func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, fmt.Sprintf("https://internal.example.org:%d/hello", w.port), http.StatusFound)
	})
	w.port = ca.Serve(t, mux, "registry.example.org", "other.example.org", "internal.example.org")
	dns := nettest.StartDNS(t, map[string][]string{"registry.example.org": {"127.0.0.1"}, "other.example.org": {"127.0.0.1"}, "internal.example.org": {"10.1.2.3"}})
	ca.WritePEM(t, w.root, "ca.pem")
	policy, err := fetch.ParsePolicy(context.Background(), []byte(fmt.Sprintf(
		`{"format": 1, "hosts": ["registry.example.org", "internal.example.org"], "ports": [%d], "private_destinations": ["127.0.0.1"]}`, w.port)), "")
	if err != nil {
		t.Fatal(err)
	}
	o := &egress.Options{Resolver: dns.Resolver(), Audit: slog.New(slog.NewJSONHandler(lockedWriter{&w.mu, w.audit}, nil))}
	if b != nil {
		o.Budget, o.Task = b, "cli"
	}
	if w.proxy, err = egress.New(policy, o); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Link(exe, filepath.Join(w.client, "get")); err != nil {
		t.Fatal(err)
	}
	return w
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (w *netWorld) url(host, path string) string {
	return fmt.Sprintf("https://%s:%d%s", host, w.port, path)
}

// goGet is the Go client's command line for url.
func (w *netWorld) goGet(url string, direct bool) string {
	cmd := fmt.Sprintf("%s %s %s ca.pem", filepath.Join(w.client, "get"), getArg, url)
	if direct {
		cmd += " direct"
	}
	return cmd
}

func (w *netWorld) events(t *testing.T) []map[string]any {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(w.audit.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("audit %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestRunShellThroughTheProxy: a command reaches an allowed host name
// through the proxy with curl (when this machine has it) and with a Go
// client, seeing the server's own certificate; a host not in the policy,
// a raw address, a redirect into a refused range and a connection that
// ignores the proxy variables all fail; the result lists what the proxy
// refused, and the audit records each request by host, bytes and
// outcome, never its path.
func TestRunShellThroughTheProxy(t *testing.T) {
	w := newNetWorld(t, nil)
	rt := runtimeWith(t, Config{Network: w.proxy, ReadOnly: []string{w.client}})
	s := testkit.Session(t, rt, testkit.Grant(t, []string{w.root}, capability.RunShell))
	shell := func(command string) (RunResult, string) {
		t.Helper()
		res, err := testkit.Call(t, s, "run_shell", map[string]any{"command": command})
		if err != nil {
			t.Fatalf("%s: %v", command, err)
		}
		return decode(t, res), res.Text
	}
	type attempt struct {
		command string
		ok      bool
		refused string // what the result's network notes must mention
	}
	attempts := []attempt{
		{w.goGet(w.url("registry.example.org", "/hello"), false), true, ""},
		{w.goGet(w.url("other.example.org", "/hello"), false), false, `"other.example.org" is not in the policy's "hosts"`},
		// Go sends loopback addresses past the proxy, straight to
		// Landlock's refusal; another address goes to the proxy.
		{w.goGet(w.url("127.0.0.1", "/hello"), false), false, ""},
		{w.goGet(w.url("192.0.2.1", "/hello"), false), false, "admits names only"},
		{w.goGet(w.url("registry.example.org", "/to-internal"), false), false, "10.1.2.3 is private"},
		{w.goGet(w.url("registry.example.org", "/hello"), true), false, ""},
	}
	if _, err := exec.LookPath("curl"); err == nil {
		curl := "curl -sS --fail --max-time 20 --cacert ca.pem "
		attempts = append(attempts,
			attempt{curl + w.url("registry.example.org", "/hello"), true, ""},
			attempt{curl + w.url("other.example.org", "/hello"), false, `"other.example.org" is not in the policy's "hosts"`},
			attempt{curl + w.url("127.0.0.1", "/hello"), false, "admits names only"},
			attempt{curl + "-L " + w.url("registry.example.org", "/to-internal"), false, "10.1.2.3 is private"},
			attempt{curl + fmt.Sprintf("--noproxy '*' --resolve registry.example.org:%d:127.0.0.1 ", w.port) + w.url("registry.example.org", "/hello"), false, ""},
			attempt{curl + "--noproxy '*' " + w.url("registry.example.org", "/hello"), false, ""},
		)
	} else {
		t.Log("no curl on this machine: the Go client alone")
	}
	for _, a := range attempts {
		r, text := shell(a.command)
		if a.ok != (r.ExitCode == 0) || a.ok && !strings.Contains(text, "hello through the proxy") {
			t.Errorf("%s: exit %d, want success %v:\n%s", a.command, r.ExitCode, a.ok, text)
		}
		notes := strings.Join(r.Network, "\n")
		if a.refused != "" && (!strings.Contains(notes, a.refused) || !strings.Contains(text, "note: the network proxy refused")) {
			t.Errorf("%s: the result does not say why (%q):\nnetwork %q\n%s", a.command, a.refused, r.Network, text)
		}
		if a.refused == "" && len(r.Network) > 0 {
			t.Errorf("%s: network notes %q", a.command, r.Network)
		}
	}
	ok, denied := 0, 0
	for _, e := range w.events(t) {
		switch e["outcome"] {
		case "ok":
			ok++
			if e["host"] != "registry.example.org" || e["bytes_received"].(float64) == 0 || e["task"] != testkit.Actor {
				t.Errorf("audit %v", e)
			}
		case "denied":
			denied++
		}
	}
	wantOK, wantDenied := 0, 0
	for _, a := range attempts {
		if a.ok {
			wantOK++
		}
		if a.refused != "" {
			wantDenied++
		}
	}
	if ok < wantOK || denied != wantDenied {
		t.Errorf("audit: %d ok, %d denied; want at least %d ok and %d denied: %s", ok, denied, wantOK, wantDenied, w.audit.String())
	}
	if strings.Contains(w.audit.String(), "/hello") || strings.Contains(w.audit.String(), "/to-internal") {
		t.Errorf("the audit names a path: %s", w.audit.String())
	}
}

// TestBudgetAcrossParallelCommands: a budget of N requests admits
// exactly N requests of commands running at once.
func TestBudgetAcrossParallelCommands(t *testing.T) {
	const allowed, commands = 3, 6
	ctx := context.Background()
	b, err := budget.Open(ctx, filepath.Join(t.TempDir(), "budget"), &budget.Policy{Format: 1, Group: "registry", WindowSeconds: 3600, WindowRequests: allowed, WindowBytes: 1 << 30}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	w := newNetWorld(t, b)
	r := NewRunner(helper(t), &RunnerOptions{Config: Config{Network: w.proxy, ReadOnly: []string{w.client}}})
	caps := capability.Set{testkit.Grant(t, []string{w.root}, capability.RunShell)}
	var wg sync.WaitGroup
	exits := make(chan int, commands)
	for range commands {
		wg.Go(func() {
			o, err := r.Command(ctx, caps, capability.RunShell, []string{"/bin/sh", "-c", w.goGet(w.url("registry.example.org", "/hello"), false)}, "", nil, 0)
			if err != nil {
				t.Error(err)
				exits <- -1
				return
			}
			exits <- o.Result.ExitCode
		})
	}
	wg.Wait()
	close(exits)
	passed := 0
	for e := range exits {
		if e == 0 {
			passed++
		}
	}
	if passed != allowed {
		t.Errorf("%d of %d commands reached the server, want %d", passed, commands, allowed)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := b.Status(ctx)
	if err != nil || st.WindowRequests != allowed || len(st.Tasks) != 1 || st.Tasks[0].Task != "cli" {
		t.Errorf("budget: %v %+v", err, st)
	}
}
