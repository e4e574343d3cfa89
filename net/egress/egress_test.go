package egress

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/budget"
)

// TestTunnelReachesAllowedHost: an HTTPS GET through the proxy reaches a
// host name of the policy, the client verifying the server's own
// certificate (nothing intercepted), and the audit records the tunnel by
// host, port and bytes, never by path or body.
func TestTunnelReachesAllowedHost(t *testing.T) {
	w := newWorld(t, "", nil)
	w.serve()
	for _, u := range []string{"https://registry.example.org:%d/hello", "https://a.cdn.example.org:%d/hello", "https://REGISTRY.example.org.:%d/hello"} {
		got, err := w.get(fmt.Sprintf(u, w.port))
		if err != nil || got != "hello through the proxy" {
			t.Fatalf("%s: %q, %v", u, got, err)
		}
	}
	w.stop()
	ev := w.events()
	if len(ev) != 3 {
		t.Fatalf("audit: %d events, want 3: %s", len(ev), w.audit.String())
	}
	var e map[string]any
	for _, x := range ev {
		if x["host"] == "registry.example.org" {
			e = x
		}
	}
	if e["msg"] != "proxied request" || e["kind"] != "connect" || e["host"] != "registry.example.org" || e["port"] != float64(w.port) ||
		e["outcome"] != "ok" || e["bytes_received"].(float64) < 100 || e["bytes_sent"].(float64) < 100 {
		t.Errorf("audit event %v", e)
	}
	for _, leak := range []string{"/hello", "hello through the proxy"} {
		if strings.Contains(w.audit.String(), leak) {
			t.Errorf("the audit holds %q: %s", leak, w.audit.String())
		}
	}
	if len(w.notes) != 0 {
		t.Errorf("notes after allowed requests: %v", w.notes)
	}
}

// TestRefusals: every destination the policy does not admit is refused
// with its rule, before any connection or at dial time, and listed for
// the command's result.
func TestRefusals(t *testing.T) {
	w := newWorld(t, "", nil)
	w.serve()
	p := w.port
	for _, c := range []struct {
		request string
		status  int
		code    fault.Code
		reason  string
	}{
		{fmt.Sprintf("CONNECT other.example.org:%d HTTP/1.1\r\nHost: other.example.org\r\n\r\n", p), 403, fault.Denied, `"other.example.org" is not in the policy's "hosts"`},
		{fmt.Sprintf("CONNECT cdn.example.org:%d HTTP/1.1\r\n\r\n", p), 403, fault.Denied, `"cdn.example.org" is not in the policy's "hosts"`},
		{fmt.Sprintf("CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n", p), 403, fault.Denied, "admits names only"},
		{fmt.Sprintf("CONNECT [::1]:%d HTTP/1.1\r\n\r\n", p), 403, fault.Denied, "admits names only"},
		{fmt.Sprintf("CONNECT 2130706433:%d HTTP/1.1\r\n\r\n", p), 403, fault.Denied, "number in disguise"},
		{fmt.Sprintf("CONNECT internal.example.org:%d HTTP/1.1\r\n\r\n", p), 403, fault.Denied, "10.1.2.3 is private"},
		{"CONNECT registry.example.org:8443 HTTP/1.1\r\n\r\n", 403, fault.Denied, "port 8443"},
		{"CONNECT registry.example.org HTTP/1.1\r\n\r\n", 400, fault.InvalidInput, "not host:port"},
		{"CONNECT registry.example.org:0 HTTP/1.1\r\n\r\n", 400, fault.InvalidInput, "no valid port"},
		{"GET http://other.example.org/ HTTP/1.1\r\nHost: other.example.org\r\n\r\n", 403, fault.Denied, "port 80"},
		{fmt.Sprintf("GET http://other.example.org:%d/ HTTP/1.1\r\n\r\n", w.plainPort), 403, fault.Denied, `"other.example.org" is not in the policy's "hosts"`},
		{fmt.Sprintf("GET http://user:pw@plain.example.org:%d/ HTTP/1.1\r\n\r\n", w.plainPort), 403, fault.Denied, "userinfo"},
		{fmt.Sprintf("GET https://registry.example.org:%d/ HTTP/1.1\r\n\r\n", p), 400, fault.InvalidInput, "through CONNECT"},
		{"GET /hello HTTP/1.1\r\nHost: registry.example.org\r\n\r\n", 400, fault.InvalidInput, "absolute http:// URL"},
		{"SSH-2.0-OpenSSH\r\n\r\n", 400, fault.InvalidInput, "not HTTP/1.1"},
	} {
		resp := w.raw(c.request)
		body := text(resp)
		if resp.StatusCode != c.status || resp.Header.Get("X-Capkit-Fault") != string(c.code) || !strings.Contains(body, c.reason) {
			t.Errorf("%q: %d %s %q; want %d %s mentioning %q", c.request, resp.StatusCode, resp.Header.Get("X-Capkit-Fault"), body, c.status, c.code, c.reason)
		}
	}
	// DNS rebinding: the name's second answer is refused at dial time.
	if _, err := w.get(fmt.Sprintf("https://rebind.example.org:%d/hello", p)); err != nil {
		t.Fatalf("rebind.example.org, first answer: %v", err)
	}
	resp := w.raw(fmt.Sprintf("CONNECT rebind.example.org:%d HTTP/1.1\r\n\r\n", p))
	if b := text(resp); resp.StatusCode != 403 || !strings.Contains(b, "127.0.0.2 is loopback") {
		t.Errorf("rebound name: %d %q", resp.StatusCode, b)
	}
	if n := w.dns.Asked("other.example.org"); n != 0 {
		t.Errorf("other.example.org, not in hosts, was resolved %d times", n)
	}
	w.stop()
	joined := strings.Join(w.notes, "\n")
	if len(w.notes) != limits.EgressMaxNotes+1 || !strings.Contains(joined, `the network proxy refused CONNECT other.example.org:`) ||
		!strings.Contains(w.notes[limits.EgressMaxNotes], "refused 7 more requests") {
		t.Errorf("notes: %q", w.notes)
	}
	for _, e := range w.events() {
		if e["outcome"] == "ok" && e["host"] != "rebind.example.org" {
			t.Errorf("a refused request audited as ok: %v", e)
		}
	}
}

// TestRedirectIntoRefusedRange: a redirect is the client's to follow,
// and its next request is refused like any other.
func TestRedirectIntoRefusedRange(t *testing.T) {
	w := newWorld(t, "", nil)
	w.serve()
	redirects := map[string]string{"/to-internal": "internal.example.org", "/to-ip": "127.0.0.1"}
	for path := range redirects {
		_, err := w.get(fmt.Sprintf("https://registry.example.org:%d%s", w.port, path))
		if err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Errorf("%s: %v, want the redirect's tunnel refused", path, err)
		}
	}
	w.stop()
	for path, want := range redirects {
		refused := false
		for _, e := range w.events() {
			refused = refused || e["host"] == want && e["outcome"] == "denied"
		}
		if !refused {
			t.Errorf("%s: no denied event for %s: %s", path, want, w.audit.String())
		}
	}
}

// TestForwardPlainHTTP: an absolute http:// request is forwarded without
// the hop-by-hop headers, its body sent and its response passed back.
func TestForwardPlainHTTP(t *testing.T) {
	w := newWorld(t, "", nil)
	w.serve()
	resp := w.raw(fmt.Sprintf("POST http://plain.example.org:%d/echo?q=1 HTTP/1.1\r\nHost: evil.example\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\nConnection: X-Drop\r\nX-Drop: 1\r\nX-Keep: 2\r\nContent-Length: 5\r\n\r\nhello", w.plainPort))
	got := text(resp)
	want := fmt.Sprintf(`POST /echo?q=1 host plain.example.org:%d body "hello"`, w.plainPort)
	if resp.StatusCode != 200 || got != want || !resp.Close {
		t.Fatalf("%d %q (close %v), want 200 %q and Connection: close", resp.StatusCode, got, resp.Close, want)
	}
	h := <-w.plainSeen
	for _, k := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Drop"} {
		if h.Get(k) != "" {
			t.Errorf("%s was forwarded", k)
		}
	}
	if h.Get("X-Keep") != "2" {
		t.Errorf("X-Keep was not forwarded: %v", h)
	}
	w.stop()
	e := w.events()[0]
	if e["kind"] != "http" || e["method"] != "POST" || e["status"] != float64(200) || e["host"] != "plain.example.org" || e["bytes_received"] != float64(len(want)) {
		t.Errorf("audit %v", e)
	}
	if strings.Contains(w.audit.String(), "/echo") || strings.Contains(w.audit.String(), "hello") {
		t.Errorf("the audit holds the path or body: %s", w.audit.String())
	}
}

// TestResponseBounds: what the server sends is bounded by
// max_response_bytes, at the bound exactly: a tunnel or a chunked
// response one byte past it is cut, a Content-Length past it refused.
func TestResponseBounds(t *testing.T) {
	const max = 64 << 10
	w := newWorld(t, fmt.Sprintf(`, "max_response_bytes": %d`, max), nil)
	w.serve()
	// A tunnel carries TLS records: ask for less than the bound, then
	// for more.
	if got, err := w.get(fmt.Sprintf("https://registry.example.org:%d/big?n=%d", w.port, max/2)); err != nil || len(got) != max/2 {
		t.Fatalf("tunnel under the bound: %d bytes, %v", len(got), err)
	}
	if got, err := w.get(fmt.Sprintf("https://registry.example.org:%d/big?n=%d", w.port, 2*max)); err == nil {
		t.Fatalf("tunnel past the bound: %d bytes passed", len(got))
	}
	for _, c := range []struct {
		n       int
		chunked bool
		ok      bool
	}{{max, false, true}, {max + 1, false, false}, {max, true, true}, {max + 1, true, false}} {
		chunked := ""
		if c.chunked {
			chunked = "&chunked=1"
		}
		got, err := w.get(fmt.Sprintf("http://plain.example.org:%d/big?n=%d%s", w.plainPort, c.n, chunked))
		if c.ok != (err == nil) || c.ok && len(got) != c.n {
			t.Errorf("plain %d bytes (chunked %v): %d bytes, %v; want passed whole: %v", c.n, c.chunked, len(got), err, c.ok)
		}
	}
	w.stop()
	limited := 0
	for _, e := range w.events() {
		if e["outcome"] == "limit" {
			limited++
			if e["bytes_received"].(float64) > max {
				t.Errorf("%v bytes passed past the bound of %d", e["bytes_received"], max)
			}
		}
	}
	if limited != 3 {
		t.Errorf("%d requests cut or refused at the bound, want 3: %s", limited, w.audit.String())
	}
}

// TestMaxRequests: max_requests counts one command's requests (one
// Serve), refused past it.
func TestMaxRequests(t *testing.T) {
	w := newWorld(t, `, "max_requests": 2`, nil)
	w.serve()
	for i := range 2 {
		if _, err := w.get(fmt.Sprintf("https://registry.example.org:%d/hello", w.port)); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	resp := w.raw(fmt.Sprintf("CONNECT registry.example.org:%d HTTP/1.1\r\n\r\n", w.port))
	if b := text(resp); resp.StatusCode != 429 || !strings.Contains(b, "max_requests") {
		t.Errorf("third request: %d %q", resp.StatusCode, b)
	}
	w.stop()
	w.serve() // another command
	if _, err := w.get(fmt.Sprintf("https://registry.example.org:%d/hello", w.port)); err != nil {
		t.Errorf("another Serve's first request: %v", err)
	}
}

// TestBudgetAcrossConcurrentTunnels: a budget of N requests admits
// exactly N of many tunnels opened at once, the rest deferred before
// any connection; each admitted tunnel is settled to what it received.
func TestBudgetAcrossConcurrentTunnels(t *testing.T) {
	const allowed, tried = 3, 8
	ctx := context.Background()
	b, err := budget.Open(ctx, filepath.Join(t.TempDir(), "budget"), &budget.Policy{Format: 1, Group: "registry", WindowSeconds: 3600, WindowRequests: allowed, WindowBytes: 1 << 30}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	w := newWorld(t, `, "max_response_bytes": 1048576`, &Options{Budget: b, Task: "build"})
	w.serve()
	var wg sync.WaitGroup
	statuses := make(chan int, tried)
	for range tried {
		wg.Go(func() {
			_, err := w.get(fmt.Sprintf("https://registry.example.org:%d/hello", w.port))
			if err == nil {
				statuses <- 200
			} else {
				statuses <- 0
			}
		})
	}
	wg.Wait()
	close(statuses)
	ok := 0
	for s := range statuses {
		if s == 200 {
			ok++
		}
	}
	if ok != allowed {
		t.Fatalf("%d of %d tunnels admitted, want %d", ok, tried, allowed)
	}
	w.stop()
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := b.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.WindowRequests != allowed || len(st.Open) != 0 || st.WindowBytes <= 0 || st.WindowBytes >= allowed<<20 {
		t.Errorf("budget after: %d requests, %d bytes, %d open", st.WindowRequests, st.WindowBytes, len(st.Open))
	}
	deferred := 0
	for _, e := range w.events() {
		if e["outcome"] == "deferred" {
			deferred++
		}
	}
	if deferred != tried-allowed {
		t.Errorf("%d deferred in the audit, want %d", deferred, tried-allowed)
	}
}

// TestServeEndsEveryConnection: when its context ends, Serve closes the
// listener and every open tunnel, then returns.
func TestServeEndsEveryConnection(t *testing.T) {
	w := newWorld(t, "", nil)
	w.serve()
	c := w.dial()
	defer c.Close()
	fmt.Fprintf(c, "CONNECT registry.example.org:%d HTTP/1.1\r\n\r\n", w.port)
	if resp := w.read(c, http.MethodConnect); resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	idle := w.dial() // still sending its head
	defer idle.Close()
	w.stop()
	for i, conn := range []net.Conn{c, idle} {
		if n, err := conn.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("connection %d: read %d bytes after Serve returned (%v), want the end", i, n, err)
		}
	}
	if _, err := net.Dial("tcp", w.addr); err == nil {
		t.Errorf("the listener still accepts after Serve returned")
	}
}

func TestNewRefusesBudgetWithoutTask(t *testing.T) {
	ctx := context.Background()
	b, err := budget.Open(ctx, filepath.Join(t.TempDir(), "budget"), &budget.Policy{Format: 1, Group: "g", WindowSeconds: 60, WindowRequests: 1, WindowBytes: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	w := newWorld(t, "", nil)
	if _, err := New(w.proxy.Policy(), &Options{Budget: b}); fault.CodeOf(err) != fault.InvalidInput {
		t.Errorf("budget without task: %v", err)
	}
	if _, err := New(nil, nil); fault.CodeOf(err) != fault.InvalidInput {
		t.Errorf("no policy: %v", err)
	}
}

// writeSlowly sends s a byte at a time, every gap.
func writeSlowly(c net.Conn, s string, gap time.Duration) {
	for i := range len(s) {
		if _, err := c.Write([]byte{s[i]}); err != nil {
			return
		}
		time.Sleep(gap)
	}
}
