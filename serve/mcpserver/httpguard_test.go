package mcpserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// serveLoopback serves s on a loopback listener through Serve (so the
// listener's port and the server's deadlines apply) and returns its
// address.
func serveLoopback(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// initialize posts one initialize and returns the status and session id.
func initialize(t *testing.T, addr string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+Path, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
}

// slowBody opens a connection that sends a POST's headers, announcing
// size bytes, and never the body.
func slowBody(t *testing.T, addr string, size int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n{", Path, addr, size)
	return c
}

// TestHTTPSlowBodiesHoldNoSlot: 16 connections that send a POST header
// and never finish the body used to take every creating slot (503 for
// every new initialize). A slot is taken only once a body is complete, and
// a body that does not arrive within BodyTimeout is answered 408.
func TestHTTPSlowBodiesHoldNoSlot(t *testing.T) {
	s := newTestServer(t, &Options{BodyTimeout: 2 * time.Second})
	addr := serveLoopback(t, s)
	var slow []net.Conn
	for range limits.MCPMaxPendingSessions {
		slow = append(slow, slowBody(t, addr, 1000))
	}
	time.Sleep(100 * time.Millisecond) // let them reach the handler
	if code, id := initialize(t, addr); code != http.StatusOK || id == "" {
		t.Fatalf("initialize beside %d slow bodies: status %d, session %q", len(slow), code, id)
	}
	slow[0].SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang guard, not a timing assertion
	resp, err := http.ReadResponse(bufio.NewReader(slow[0]), nil)
	if err != nil {
		t.Fatalf("slow body never answered: %v", err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("slow body: status %d, want 408", resp.StatusCode)
	}
}

// TestHTTPInFlightBytes: the bytes of bodies being received are capped
// across connections; past the cap a request is refused at once with 503
// and Retry-After, before its body is read.
func TestHTTPInFlightBytes(t *testing.T) {
	s := newTestServer(t, &Options{MaxInFlightBytes: limits.MCPMaxMessageBytes, BodyTimeout: time.Minute})
	addr := serveLoopback(t, s)
	slowBody(t, addr, limits.MCPMaxMessageBytes) // holds the whole budget
	time.Sleep(100 * time.Millisecond)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+Path, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("request past the in-flight cap: status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// A body announced over the message bound is refused before reading.
	c := slowBody(t, addr, limits.MCPMaxMessageBytes+1)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	r2, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || r2.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %v %v", r2, err)
	}
}

// TestHTTPEvictsIdleSessions: clients that vanish without DELETE (the
// TypeScript SDK's close, the Inspector) used to fill MaxSessions for the
// idle timeout. A new session evicts the least recently used idle one.
func TestHTTPEvictsIdleSessions(t *testing.T) {
	s := newTestServer(t, &Options{MaxSessions: 2})
	addr := serveLoopback(t, s)
	var ids []string
	for i := range 5 {
		code, id := initialize(t, addr)
		if code != http.StatusOK || id == "" {
			t.Fatalf("initialize %d with MaxSessions 2: status %d", i, code)
		}
		ids = append(ids, id)
	}
	s.http.mu.Lock()
	n := len(s.http.live)
	_, newest := s.http.live[ids[4]]
	_, oldest := s.http.live[ids[0]]
	s.http.mu.Unlock()
	if n != 2 || !newest || oldest {
		t.Errorf("live sessions %d (newest kept %v, oldest kept %v), want the 2 most recent", n, newest, oldest)
	}
	// A session with a request in flight is not idle: it is never evicted.
	cs, err := connectHTTPURL("http://"+addr, nil, nil, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call(t, cs, "echo", map[string]any{"text": "still here"})
}

// TestHTTPHostPort: the Host and Origin headers must name the listener's
// port; a port that is not a number, or another port, is refused.
func TestHTTPHostPort(t *testing.T) {
	s := newTestServer(t, nil)
	addr := serveLoopback(t, s)
	_, port, _ := net.SplitHostPort(addr)
	other := "1"
	if port == other {
		other = "2"
	}
	for _, c := range []struct {
		name string
		hdr  http.Header
		want int
	}{
		{"listener port", http.Header{"Host": {"localhost:" + port}}, http.StatusOK},
		{"LOCALHOST", http.Header{"Host": {"LOCALHOST:" + port}}, http.StatusOK},
		{"port not a number", http.Header{"Host": {"localhost:evil"}}, http.StatusForbidden},
		{"other port", http.Header{"Host": {"localhost:" + other}}, http.StatusForbidden},
		{"no port (80)", http.Header{"Host": {"localhost"}}, http.StatusForbidden},
		{"origin on the listener", http.Header{"Origin": {"http://127.0.0.1:" + port}}, http.StatusOK},
		{"origin on another port", http.Header{"Origin": {"http://localhost:" + other}}, http.StatusForbidden},
		{"origin port not a number", http.Header{"Origin": {"http://localhost:x"}}, http.StatusForbidden},
	} {
		if got := post(t, "http://"+addr+Path, c.hdr); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
}

// TestHTTPStateless: with Stateless, a client of the 2026-07-28 protocol is
// served without a session slot; without it, the same client falls back to
// a session.
func TestHTTPStateless(t *testing.T) {
	for _, stateless := range []bool{true, false} {
		t.Run(fmt.Sprint("stateless=", stateless), func(t *testing.T) {
			s := newTestServer(t, &Options{Stateless: stateless, MaxSessions: 1})
			addr := serveLoopback(t, s)
			cs, err := connectHTTPURL("http://"+addr, nil, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res := call(t, cs, "echo", map[string]any{"text": "hi"})
			if res.IsError {
				t.Fatalf("echo: %+v", res.Content)
			}
			live := func() int {
				s.http.mu.Lock()
				defer s.http.mu.Unlock()
				return len(s.http.live)
			}
			if stateless && live() != 0 {
				t.Errorf("a stateless client holds %d session slots", live())
			}
			// A session takes its slot when its initialize handler returns,
			// which may be after the client has its answer and has called.
			for deadline := time.Now().Add(10 * time.Second); !stateless && live() == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if !stateless && live() != 1 {
				t.Errorf("a session client holds %d session slots, want 1", live())
			}
		})
	}
}

// TestStatelessSessionRetried: when the shared stateless session cannot
// start, that request is refused and the next one starts it (the failure
// is not kept for the life of the server).
func TestStatelessSessionRetried(t *testing.T) {
	rt := testRuntime(t)
	ok := newSessionFunc(rt)
	calls := 0
	s := New(rt, func(ctx context.Context) (*kernel.Session, error) {
		calls++
		if calls == 1 {
			return nil, errors.New("no session yet")
		}
		return ok(ctx)
	}, &Options{Stateless: true})
	req := httptest.NewRequest(http.MethodPost, Path, nil)
	req = req.WithContext(context.WithValue(req.Context(), tenantKey{}, s.http.open))
	if s.http.statelessServer(req) != nil {
		t.Fatal("a server without a session was returned")
	}
	first := s.http.statelessServer(req)
	if first == nil || s.http.statelessServer(req) != first || calls != 2 {
		t.Fatalf("the session was not started on retry, or started again (%d starts)", calls)
	}
}

// TestHTTPHostIsTheLocalAddress: a server reached beyond loopback (bound
// to that address, or to 0.0.0.0) accepts, as Host and as Origin, the IP
// address the request arrived at, and no other address or name.
func TestHTTPHostIsTheLocalAddress(t *testing.T) {
	s := newTestServer(t, &Options{AllowNonLoopback: true})
	s.http.port.Store(8933)
	local := &net.TCPAddr{IP: net.ParseIP("10.213.0.1"), Port: 8933}
	for _, c := range []struct {
		name, host, origin string
		local              net.Addr
		want               int
	}{
		{"the address arrived at", "10.213.0.1:8933", "", local, http.StatusOK},
		{"the address, its own origin", "10.213.0.1:8933", "http://10.213.0.1:8933", local, http.StatusOK},
		{"the address, as IPv4 in IPv6", "[::ffff:10.213.0.1]:8933", "", local, http.StatusOK},
		{"another port", "10.213.0.1:8934", "", local, http.StatusForbidden},
		{"another address of the machine", "10.213.0.2:8933", "", local, http.StatusForbidden},
		{"a name resolving anywhere", "evil.example:8933", "", local, http.StatusForbidden},
		{"foreign origin", "10.213.0.1:8933", "http://evil.example", local, http.StatusForbidden},
		{"origin on another address", "10.213.0.1:8933", "http://10.213.0.2:8933", local, http.StatusForbidden},
		{"no local address known", "10.213.0.1:8933", "", nil, http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(initBody))
			req.Host = c.host
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			if c.local != nil {
				req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, c.local))
			}
			w := httptest.NewRecorder()
			s.Handler().ServeHTTP(w, req)
			if w.Code != c.want {
				t.Fatalf("status %d, want %d: %s", w.Code, c.want, w.Body)
			}
		})
	}
}

// TestServeReportsServing: OnServing is called once, with the listener's
// address, when Serve serves; not at all when Serve refuses the listener.
func TestServeReportsServing(t *testing.T) {
	served := make(chan net.Addr, 2)
	s := newTestServer(t, &Options{OnServing: func(a net.Addr) { served <- a }})
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skip(err)
	}
	if err := s.Serve(context.Background(), ln); !errors.Is(err, ErrNonLoopback) || len(served) != 0 {
		t.Fatalf("refused listener: %v, OnServing called %d times", err, len(served))
	}
	addr := serveLoopback(t, s)
	if got := <-served; got.String() != addr {
		t.Fatalf("OnServing(%s), want %s", got, addr)
	}
	if code, _ := initialize(t, addr); code != http.StatusOK || len(served) != 0 {
		t.Fatalf("status %d; OnServing called %d more times", code, len(served))
	}
}
