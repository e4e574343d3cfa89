package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/limits"
)

// padded is a CONNECT to a host not in the policy whose head is exactly
// size bytes.
func padded(t *testing.T, size int) string {
	head := "CONNECT other.example.org:443 HTTP/1.1\r\nX-Pad: "
	end := "\r\n\r\n"
	n := size - len(head) - len(end)
	if n < 0 {
		t.Fatalf("no room for %d bytes", size)
	}
	return head + strings.Repeat("p", n) + end
}

// TestHeadBytesEdge: a head of limits.EgressMaxHeaderBytes is read and
// answered on its merits; one byte more is refused unread.
func TestHeadBytesEdge(t *testing.T) {
	w := newWorld(t, "", nil)
	w.serve()
	at := w.raw(padded(t, limits.EgressMaxHeaderBytes))
	if b := text(at); at.StatusCode != 403 || !strings.Contains(b, `"other.example.org" is not in the policy's "hosts"`) {
		t.Errorf("head at the bound: %d %q", at.StatusCode, b)
	}
	over := w.raw(padded(t, limits.EgressMaxHeaderBytes+1))
	if b := text(over); over.StatusCode != 431 || over.Header.Get("X-Capkit-Fault") != "limit" || !strings.Contains(b, fmt.Sprint(limits.EgressMaxHeaderBytes)) {
		t.Errorf("head one byte past the bound: %d %q", over.StatusCode, b)
	}
}

// TestSlowEndlessAndMalformedClients: a head that takes too long, one
// that never ends and one that is not HTTP are each answered and
// closed, and the proxy serves the next request.
func TestSlowEndlessAndMalformedClients(t *testing.T) {
	w := newWorld(t, "", nil)
	w.proxy.headerTimeout = 200 * time.Millisecond
	w.serve()
	slow := w.dial()
	defer slow.Close()
	go writeSlowly(slow, "CONNECT registry.example.org:443 HTTP/1.1\r\n\r\n", 50*time.Millisecond)
	if resp := w.read(slow, http.MethodConnect); resp.StatusCode != 408 {
		t.Errorf("trickling head: %d, want 408", resp.StatusCode)
	}
	silent := w.dial()
	defer silent.Close()
	if n, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("silent client: read %d bytes, %v; want the connection closed at the header timeout", n, err)
	}
	endless := w.dial()
	defer endless.Close()
	go func() {
		io.WriteString(endless, "GET http://plain.example.org/ HTTP/1.1\r\n")
		for {
			if _, err := io.WriteString(endless, "X-More: "+strings.Repeat("m", 1000)+"\r\n"); err != nil {
				return
			}
		}
	}()
	if resp := w.read(endless, http.MethodGet); resp.StatusCode != 431 {
		t.Errorf("endless head: %d, want 431", resp.StatusCode)
	}
	for _, junk := range []string{"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", "GET  HTTP/1.1\r\n\r\n", "CONNECT\r\n\r\n", "GET http://[::1/ HTTP/1.1\r\n\r\n", "GET http://plain.example.org/ HTTP/9.9\r\n\r\n"} {
		if resp := w.raw(junk); resp.StatusCode != 400 {
			t.Errorf("%q: %d, want 400", junk, resp.StatusCode)
		}
	}
	if got, err := w.get(fmt.Sprintf("https://registry.example.org:%d/hello", w.port)); err != nil || got != "hello through the proxy" {
		t.Errorf("after the bad clients: %q, %v", got, err)
	}
}

// TestConnectionsAtOnce: limits.EgressMaxConns tunnels are served at
// once; one more connection waits unanswered until one of them closes.
func TestConnectionsAtOnce(t *testing.T) {
	w := newWorld(t, "", nil)
	w.serve()
	var held []net.Conn
	for range limits.EgressMaxConns {
		held = append(held, w.dial())
	}
	for _, c := range held {
		defer c.Close()
		fmt.Fprintf(c, "CONNECT registry.example.org:%d HTTP/1.1\r\n\r\n", w.port)
		if resp := w.read(c, http.MethodConnect); resp.StatusCode != 200 {
			t.Fatalf("tunnel within the bound: %d", resp.StatusCode)
		}
	}
	waiting := w.dial()
	defer waiting.Close()
	fmt.Fprintf(waiting, "CONNECT registry.example.org:%d HTTP/1.1\r\n\r\n", w.port)
	// Nothing answers while both slots are held: absence is all a wait
	// can show, so a slow machine cannot fail this.
	waiting.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := waiting.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection past the bound was answered: %d bytes, %v", n, err)
	}
	held[0].Close()
	waiting.SetReadDeadline(time.Now().Add(hangGuard))
	if resp := w.read(waiting, http.MethodConnect); resp.StatusCode != 200 {
		t.Errorf("the waiting connection once a slot was free: %d", resp.StatusCode)
	}
}

// TestIdleTunnel: a tunnel in which nothing moves either way is closed
// after the idle timeout; one that keeps moving is not.
func TestIdleTunnel(t *testing.T) {
	w := newWorld(t, "", nil)
	w.proxy.idleTimeout = 300 * time.Millisecond
	w.serve()
	c := w.dial()
	defer c.Close()
	fmt.Fprintf(c, "CONNECT registry.example.org:%d HTTP/1.1\r\n\r\n", w.port)
	if resp := w.read(c, http.MethodConnect); resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("idle tunnel: read %d bytes, %v; want it closed", n, err)
	}
	// A client that speaks more slowly than the timeout between its
	// requests, but whose each exchange is quick, keeps its tunnel.
	busy := w.client()
	for range 3 {
		if _, err := busy.Get(fmt.Sprintf("https://registry.example.org:%d/hello", w.port)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Nor is a tunnel whose server sends a byte at a time, each well
	// within the timeout, for longer than the timeout.
	resp, err := busy.Get(fmt.Sprintf("https://registry.example.org:%d/trickle", w.port))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != strings.Repeat(".", 20) {
		t.Errorf("trickling server: %q, %v; want all 20 bytes", body, err)
	}
	w.stop()
	found := false
	for _, e := range w.events() {
		found = found || e["outcome"] == "limit" && strings.Contains(fmt.Sprint(e["reason"]), "moved no byte either way")
	}
	if !found {
		t.Errorf("no idle closure in the audit: %s", w.audit.String())
	}
}

// FuzzServeConn: whatever a command sends, its connection is answered
// or closed, and nothing is dialled but the loopback test servers.
func FuzzServeConn(f *testing.F) {
	for _, s := range []string{"CONNECT registry.example.org:443 HTTP/1.1\r\n\r\n", "GET http://plain.example.org/x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
		"GET http://plain.example.org/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "\r\n\r\n", "CONNECT [::1]:443 HTTP/1.0\n\n"} {
		f.Add([]byte(s))
	}
	w := newWorld(f, "", nil)
	w.proxy.headerTimeout = 100 * time.Millisecond
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &session{p: w.proxy}
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			s.serveConn(context.Background(), server)
			close(done)
		}()
		go func() { client.Write(data); client.Close() }()
		go io.Copy(io.Discard, bufio.NewReader(client))
		select {
		case <-done:
		case <-time.After(hangGuard):
			t.Fatalf("%q: the connection was neither answered nor closed", data)
		}
	})
}
