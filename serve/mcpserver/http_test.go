package mcpserver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/fault"
)

// headerTransport adds headers to every request of a client.
type headerTransport struct {
	base http.RoundTripper
	hdr  http.Header
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.hdr {
		r.Header[k] = v
	}
	return h.base.RoundTrip(r)
}

func httpClient(hdr http.Header) *http.Client {
	return &http.Client{Transport: headerTransport{http.DefaultTransport, hdr}}
}

// connectHTTP serves s.Handler on a loopback test server and connects a
// Streamable HTTP client to it.
func connectHTTP(t *testing.T, s *Server, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	cs, err := connectHTTPURL(ts.URL, nil, copts, version)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func connectHTTPURL(url string, hdr http.Header, copts *mcp.ClientOptions, version string) (*mcp.ClientSession, error) {
	tr := &mcp.StreamableClientTransport{Endpoint: url + Path, HTTPClient: httpClient(hdr), MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return newClient(copts).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
}

// post sends one raw initialize request and returns the status.
func post(t *testing.T, url string, hdr http.Header) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v[0]
			continue
		}
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestHTTPRequestChecks(t *testing.T) {
	s := newTestServer(t, &Options{
		BearerToken:    "s3cret-token",
		AllowedHosts:   []string{"mcp.internal", "other.internal:9000"},
		AllowedOrigins: []string{"https://app.example"},
	})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.URL, "http://"))
	auth := "Bearer s3cret-token"
	cases := []struct {
		name string
		path string
		hdr  map[string]string
		want int
	}{
		{"ok", Path, map[string]string{"Authorization": auth}, http.StatusOK},
		{"token scheme is case-insensitive", Path, map[string]string{"Authorization": "bearer s3cret-token"}, http.StatusOK},
		{"no token", Path, nil, http.StatusUnauthorized},
		{"wrong token", Path, map[string]string{"Authorization": "Bearer s3cret-tokeN"}, http.StatusUnauthorized},
		{"token prefix", Path, map[string]string{"Authorization": "Bearer s3cret"}, http.StatusUnauthorized},
		{"basic auth", Path, map[string]string{"Authorization": "Basic s3cret-token"}, http.StatusUnauthorized},
		{"rebinding host", Path, map[string]string{"Authorization": auth, "Host": "evil.example:" + port}, http.StatusForbidden},
		{"rebinding host without token", Path, map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		{"localhost", Path, map[string]string{"Authorization": auth, "Host": "localhost:" + port}, http.StatusOK},
		{"ipv6 loopback", Path, map[string]string{"Authorization": auth, "Host": "[::1]:" + port}, http.StatusOK},
		{"loopback prefix name", Path, map[string]string{"Authorization": auth, "Host": "localhost.evil.example"}, http.StatusForbidden},
		{"allowed host any port", Path, map[string]string{"Authorization": auth, "Host": "MCP.internal:1234"}, http.StatusOK},
		{"allowed host:port", Path, map[string]string{"Authorization": auth, "Host": "other.internal:9000"}, http.StatusOK},
		{"allowed host, other port", Path, map[string]string{"Authorization": auth, "Host": "other.internal:9001"}, http.StatusForbidden},
		{"foreign origin", Path, map[string]string{"Authorization": auth, "Origin": "http://evil.example"}, http.StatusForbidden},
		{"null origin", Path, map[string]string{"Authorization": auth, "Origin": "null"}, http.StatusForbidden},
		{"loopback origin", Path, map[string]string{"Authorization": auth, "Origin": "http://localhost:5173"}, http.StatusOK},
		{"allowed origin", Path, map[string]string{"Authorization": auth, "Origin": "https://app.example"}, http.StatusOK},
		{"allowed origin, other scheme", Path, map[string]string{"Authorization": auth, "Origin": "http://app.example"}, http.StatusForbidden},
		{"other path", "/other", map[string]string{"Authorization": auth}, http.StatusNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := http.Header{}
			for k, v := range c.hdr {
				hdr[k] = []string{v}
			}
			if got := post(t, ts.URL+c.path, hdr); got != c.want {
				t.Errorf("status %d, want %d", got, c.want)
			}
		})
	}
	t.Run("sdk client with token", func(t *testing.T) {
		cs, err := connectHTTPURL(ts.URL, http.Header{"Authorization": {auth}}, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if r := call(t, cs, "echo", map[string]any{"text": "hi"}); text(t, r) != "hi" {
			t.Errorf("echo: %q", text(t, r))
		}
	})
	t.Run("sdk client without token", func(t *testing.T) {
		if cs, err := connectHTTPURL(ts.URL, nil, nil, ""); err == nil {
			cs.Close()
			t.Fatal("connected without the token")
		}
	})
}

// TestHTTPSessionIsolation: two clients of one server have separate kernel
// sessions: a budget spent or a tool activated by one does not reach the
// other.
func TestHTTPSessionIsolation(t *testing.T) {
	s := newTestServer(t, nil)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	a, err := connectHTTPURL(ts.URL, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := connectHTTPURL(ts.URL, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	call(t, a, "limited", nil)
	call(t, a, "limited", nil)
	if fi := faultOf(t, call(t, a, "limited", nil)); fi.Code != fault.Limit {
		t.Fatalf("a's third call: %+v", fi)
	}
	if r := call(t, b, "limited", nil); r.IsError {
		t.Errorf("b's first call refused: %s", text(t, r))
	}

	call(t, a, "tool_search", map[string]any{"query": "rare"})
	if listNames(t, a)["rare_thing"] == nil {
		t.Error("rare_thing not listed for a")
	}
	if listNames(t, b)["rare_thing"] != nil {
		t.Error("a's activation leaked into b's list")
	}
}

// TestHTTPMaxSessions: with every slot taken by a session that has a
// request in flight (an open event stream), a new session is refused with
// 503; once that stream ends the idle session is evicted for the new one.
// Invalid requests never hold a slot.
func TestHTTPMaxSessions(t *testing.T) {
	s := newTestServer(t, &Options{MaxSessions: 1})
	addr := serveLoopback(t, s)
	code, id := initialize(t, addr)
	if code != http.StatusOK {
		t.Fatalf("initialize: %d", code)
	}
	note, _ := http.NewRequest(http.MethodPost, "http://"+addr+Path, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	note.Header.Set("Content-Type", "application/json")
	note.Header.Set("Accept", "application/json, text/event-stream")
	note.Header.Set("Mcp-Session-Id", id)
	if resp, err := http.DefaultClient.Do(note); err == nil {
		resp.Body.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	stream, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+Path, nil)
	stream.Header.Set("Accept", "text/event-stream")
	stream.Header.Set("Mcp-Session-Id", id)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(stream); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	busy := func() bool {
		s.http.mu.Lock()
		defer s.http.mu.Unlock()
		e := s.http.live[id]
		return e != nil && e.busy > 0
	}
	for deadline := time.Now().Add(hangGuardTest); !busy(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the event stream never reached the session")
		}
	}
	if code, _ := initialize(t, addr); code != http.StatusServiceUnavailable {
		t.Fatalf("a new session beside a busy one with MaxSessions 1: status %d, want 503", code)
	}
	for range 3 {
		post(t, "http://"+addr+Path, http.Header{"Content-Type": {"text/plain"}})
	}
	cancel()
	<-done
	for deadline := time.Now().Add(hangGuardTest); busy(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the session stayed busy after its stream ended")
		}
	}
	if code, _ := initialize(t, addr); code != http.StatusOK {
		t.Fatalf("a new session once the other is idle: status %d", code)
	}
}

// hangGuardTest bounds the waits of these tests: a guard against a hang,
// not a speed assertion.
const hangGuardTest = 2 * time.Minute

func TestListenAndServe(t *testing.T) {
	s := newTestServer(t, nil)
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "example.com:0"} {
		err := s.ListenAndServe(context.Background(), addr)
		if !errors.Is(err, ErrNonLoopback) || fault.CodeOf(err) != fault.Denied {
			t.Errorf("%s: %v", addr, err)
		}
	}
	if err := s.ListenAndServe(context.Background(), "no-port"); fault.CodeOf(err) != fault.InvalidInput {
		t.Errorf("no port: %v", err)
	}

	// A served session is closed, and Serve returns nil, when ctx ends.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	cs, err := connectHTTPURL("http://"+ln.Addr().String(), nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	call(t, cs, "echo", map[string]any{"text": "x"})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Error("call after stop succeeded")
	}
	cs.Close()
}

func TestServeRefusesNonLoopbackListener(t *testing.T) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skip(err)
	}
	s := newTestServer(t, nil)
	if err := s.Serve(context.Background(), ln); !errors.Is(err, ErrNonLoopback) {
		t.Errorf("Serve on %s: %v", ln.Addr(), err)
	}
	s = newTestServer(t, &Options{AllowNonLoopback: true})
	ln, err = net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Serve(ctx, ln); err != nil {
		t.Errorf("AllowNonLoopback: %v", err)
	}
}

// TestHTTPAdmitHoldsBound: sessions created by requests that raced past
// the check are closed once MaxSessions are live.
func TestHTTPAdmitHoldsBound(t *testing.T) {
	s := newTestServer(t, &Options{MaxSessions: 1})
	h := s.http
	session := func() *mcp.ServerSession {
		ks, err := s.startSession(context.Background(), s.newSession)
		if err != nil {
			t.Fatal(err)
		}
		st, ct := mcp.NewInMemoryTransports()
		ss, err := s.bind(ks, nil).ms.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := newClient(nil).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return ss
	}
	if !h.reserve(h.open) || !h.reserve(h.open) {
		t.Fatal("two creating requests refused")
	}
	first, second := session(), session()
	h.admit(first, h.open, nil)
	h.admit(second, h.open, nil)
	done := make(chan struct{})
	go func() { second.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the session past the bound was not closed")
	}
	if h.reserve(h.open) {
		t.Error("a creating request admitted with MaxSessions live")
	}
	first.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !h.reserve(h.open) {
		if time.Now().After(deadline) {
			t.Fatal("slot never freed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
