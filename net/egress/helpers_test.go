package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/internal/testkit/nettest"
	"github.com/capkit/capkit/net/fetch"
)

// hangGuard bounds any one exchange of a test: reaching it is a hang.
const hangGuard = 30 * time.Second

// world is a proxy on loopback in front of an HTTPS server and a plain
// HTTP server, both on 127.0.0.1, which a test DNS server names:
// registry.example.org and a.cdn.example.org (in the policy's hosts),
// other.example.org (not), internal.example.org (in hosts, resolving to
// 10.1.2.3, which the guard refuses), rebind.example.org (127.0.0.1,
// then 127.0.0.2) and plain.example.org (the plain server).
type world struct {
	t          testing.TB
	ca         *nettest.CA
	dns        *nettest.DNS
	port       int // HTTPS
	plainPort  int
	proxy      *Proxy
	addr       string
	audit      *testkit.Buffer
	notes      []string
	stop       func()
	plainSeen  chan http.Header
	policyPath string
}

// body is n bytes of a known pattern.
func body(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

func newWorld(t testing.TB, policyExtra string, opts *Options) *world {
	t.Helper()
	w := &world{t: t, ca: nettest.NewCA(t), audit: &testkit.Buffer{}, plainSeen: make(chan http.Header, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(rw http.ResponseWriter, r *http.Request) { fmt.Fprint(rw, "hello through the proxy") })
	mux.HandleFunc("/big", func(rw http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		rw.Write(body(n))
	})
	mux.HandleFunc("/trickle", func(rw http.ResponseWriter, r *http.Request) {
		// A byte every 50 ms for a second: slower than any relay buffer fills.
		for range 20 {
			rw.Write([]byte("."))
			rw.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
		}
	})
	mux.HandleFunc("/to-internal", func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, fmt.Sprintf("https://internal.example.org:%d/hello", w.port), http.StatusFound)
	})
	mux.HandleFunc("/to-ip", func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, fmt.Sprintf("https://127.0.0.1:%d/hello", w.port), http.StatusFound)
	})
	w.port = w.ca.Serve(t, mux, "registry.example.org", "a.cdn.example.org", "other.example.org", "internal.example.org", "rebind.example.org")
	plain := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.plainSeen <- r.Header.Clone()
		if r.URL.Path == "/big" {
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			if r.URL.Query().Get("chunked") != "" {
				rw.Header().Set("Content-Type", "application/octet-stream")
				rw.(http.Flusher).Flush()
			}
			rw.Write(body(n))
			return
		}
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(rw, "%s %s host %s body %q", r.Method, r.URL.RequestURI(), r.Host, b)
	}))
	t.Cleanup(plain.Close)
	w.plainPort = plain.Listener.Addr().(*net.TCPAddr).Port
	w.dns = nettest.StartDNS(t, map[string][]string{
		"registry.example.org": {"127.0.0.1"}, "a.cdn.example.org": {"127.0.0.1"}, "other.example.org": {"127.0.0.1"},
		"internal.example.org": {"10.1.2.3"}, "rebind.example.org": {"127.0.0.1", "127.0.0.2"}, "plain.example.org": {"127.0.0.1"},
	})
	dir := t.TempDir()
	w.policyPath = filepath.Join(dir, "policy.json")
	doc := fmt.Sprintf(`{"format": 1, "hosts": ["registry.example.org", "*.cdn.example.org", "internal.example.org", "rebind.example.org", "plain.example.org"],
		"ports": [%d, %d], "private_destinations": ["127.0.0.1"]%s}`, w.port, w.plainPort, policyExtra)
	if err := os.WriteFile(w.policyPath, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	policy, err := fetch.LoadPolicy(context.Background(), w.policyPath)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.Resolver = w.dns.Resolver()
	o.Audit = slog.New(slog.NewJSONHandler(w.audit, nil))
	if w.proxy, err = New(policy, &o); err != nil {
		t.Fatal(err)
	}
	return w
}

// serve starts the proxy on a loopback listener; Cleanup stops it.
func (w *world) serve() {
	w.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.t.Fatal(err)
	}
	w.addr = l.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		w.notes = w.proxy.Serve(ctx, l)
		close(done)
	}()
	w.stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(hangGuard):
			w.t.Fatal("Serve did not return after its context ended")
		}
	}
	w.t.Cleanup(w.stop)
}

// client is an HTTP client that uses the proxy and trusts the test CA.
func (w *world) client() *http.Client {
	u, _ := url.Parse("http://" + w.addr)
	return &http.Client{Timeout: hangGuard, Transport: &http.Transport{
		Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{RootCAs: w.ca.Pool()}, DisableKeepAlives: true,
	}}
}

// get fetches url through the proxy and returns the body.
func (w *world) get(rawURL string) (string, error) {
	resp, err := w.client().Get(rawURL)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return string(b), fmt.Errorf("status %d", resp.StatusCode)
	}
	return string(b), err
}

// raw sends request to the proxy as written and reads the response.
func (w *world) raw(request string) *http.Response {
	w.t.Helper()
	c := w.dial()
	defer c.Close()
	if _, err := io.WriteString(c, request); err != nil {
		w.t.Fatal(err)
	}
	method, _, _ := strings.Cut(request, " ")
	return w.read(c, method)
}

func (w *world) dial() net.Conn {
	w.t.Helper()
	c, err := net.Dial("tcp", w.addr)
	if err != nil {
		w.t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(hangGuard))
	return c
}

// read reads one response to a request of method from c, its body
// whole (none for a tunnel that opened).
func (w *world) read(c net.Conn, method string) *http.Response {
	w.t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		w.t.Fatalf("no response from the proxy: %v", err)
	}
	if method == http.MethodConnect && resp.StatusCode == http.StatusOK {
		resp.Body = http.NoBody
		return resp
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp
}

func text(resp *http.Response) string {
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// events are the audit's records.
func (w *world) events() []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(w.audit.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			w.t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}
