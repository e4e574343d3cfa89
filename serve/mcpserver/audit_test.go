package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/kernel"
)

// lockedBuffer is a bytes.Buffer safe for the audit's writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) requests(t *testing.T) []string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		var ev struct{ Session, Request string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Session == "" {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, ev.Request)
	}
	return out
}

// auditedServer serves an echo tool whose calls are audited into buf.
func auditedServer(t *testing.T, buf *lockedBuffer, opts *Options) *Server {
	t.Helper()
	b := kernel.NewBuilder(&kernel.Options{Audit: slog.New(kernel.AuditHandler(slog.NewJSONHandler(buf, nil)))})
	if err := kernel.AddTool(b, kernel.Policy{Name: "echo"}, kernel.Meta{Effect: capability.ReadFile, Hot: true, Description: "Echoes text."},
		func(_ context.Context, _ *kernel.Call, in echoIn) (echoOut, error) {
			return echoOut{Echo: in.Text}, nil
		}); err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return New(rt, newSessionFunc(rt), opts)
}

const echoCall = `"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`

// TestAuditNamesTheRequest: a tools/call's audit event names its JSON-RPC
// id, whichever path serves it (stdio's direct path, stdio through the
// SDK, HTTP); a string id that is not short and plain is named by a
// digest, never as sent.
func TestAuditNamesTheRequest(t *testing.T) {
	ids := []string{`42`, `"req-7"`, `"a/b path"`}
	unsafe, _ := jsonrpc.MakeID("a/b path")
	want := []string{"42", "req-7", auditRequestID(unsafe)}
	if !strings.HasPrefix(want[2], "sha256:") || len(want[2]) != len("sha256:")+16 {
		t.Fatalf("the unsafe id is named %q", want[2])
	}
	for _, direct := range []bool{true, false} {
		t.Run(map[bool]string{true: "stdio direct", false: "stdio through the SDK"}[direct], func(t *testing.T) {
			var buf lockedBuffer
			s := auditedServer(t, &buf, nil)
			s.opts.disableDirect = !direct
			p := startRaw(t, s, 1<<16)
			p.initialize()
			for _, id := range ids {
				p.send(`{"jsonrpc":"2.0","id":` + id + `,` + echoCall + "\n")
				if r := p.next(); r.Error != nil {
					t.Fatalf("call %s: %+v", id, r.Error)
				}
			}
			if got := buf.requests(t); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("requests %q, want %q", got, want)
			}
		})
	}
	t.Run("http", func(t *testing.T) {
		var buf lockedBuffer
		s := auditedServer(t, &buf, nil)
		ts := httptest.NewServer(s.Handler())
		defer ts.Close()
		_, session, _ := rawPost(t, ts.URL, "", "", initBody)
		rawPost(t, ts.URL, "", session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		for _, id := range ids {
			if code, _, body := rawPost(t, ts.URL, "", session, `{"jsonrpc":"2.0","id":`+id+`,`+echoCall); code != 200 {
				t.Fatalf("call %s: status %d: %s", id, code, body)
			}
		}
		// A client's header of the server's name is not what is audited.
		req := httptest.NewRequest("POST", Path, strings.NewReader(`{"jsonrpc":"2.0","id":9,`+echoCall))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set(requestIDHeader, "forged")
		req.Host = strings.TrimPrefix(ts.URL, "http://")
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		if w.Code != 200 {
			t.Fatalf("call 9: status %d: %s", w.Code, w.Body)
		}
		want := append(want, "9")
		if got := buf.requests(t); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("requests %q, want %q", got, want)
		}
	})
}
