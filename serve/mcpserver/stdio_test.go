package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// rawPeer drives ServeStdio with raw lines.
type rawPeer struct {
	c    *stdioConn
	t    *testing.T
	w    *io.PipeWriter
	sw   *io.PipeWriter // the server's output
	r    *bufio.Reader
	done chan error
}

type rawResponse struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Method string `json:"method"`
}

func startRaw(t *testing.T, s *Server, maxLine int) *rawPeer {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ks, err := s.startSession(context.Background(), s.newSession)
	if err != nil {
		t.Fatal(err)
	}
	c := newStdioConn(sr, sw, s.log, true, maxLine)
	p := &rawPeer{c: c, t: t, w: cw, sw: sw, r: bufio.NewReader(cr), done: make(chan error, 1)}
	go func() { p.done <- s.serveConn(context.Background(), ks, c) }()
	t.Cleanup(func() {
		cw.Close()
		sw.Close()
	})
	return p
}

func (p *rawPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.w, line); err != nil {
		p.t.Fatal(err)
	}
}

// nextRaw reads the next line that is not a notification.
func (p *rawPeer) nextRaw() (string, error) {
	for {
		line, err := p.r.ReadString('\n')
		if err != nil {
			return "", err
		}
		if !strings.Contains(line[:min(len(line), 64)], `"method"`) {
			return line, nil
		}
	}
}

// next reads the next message that is not a notification.
func (p *rawPeer) next() rawResponse {
	p.t.Helper()
	for {
		line, err := p.r.ReadBytes('\n')
		if err != nil {
			p.t.Fatalf("reading response: %v", err)
		}
		var r rawResponse
		if err := json.Unmarshal(line, &r); err != nil {
			p.t.Fatalf("response is not JSON: %v: %.200s", err, line)
		}
		if r.Method == "" {
			return r
		}
	}
}

func (p *rawPeer) initialize() {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
	if r := p.next(); r.Error != nil {
		p.t.Fatalf("initialize: %+v", r.Error)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
}

func TestStdioMalformedLines(t *testing.T) {
	s := newTestServer(t, nil)
	p := startRaw(t, s, 1024)
	cases := []struct {
		name string
		line string
		code int64
	}{
		{"not json", "{not json\n", jsonrpc.CodeParseError},
		{"trailing data", `{"jsonrpc":"2.0","id":1,"method":"ping"} x` + "\n", jsonrpc.CodeParseError},
		{"invalid utf-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}\n", jsonrpc.CodeParseError},
		{"duplicate member", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}` + "\n", jsonrpc.CodeParseError},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]` + "\n", jsonrpc.CodeInvalidRequest},
		{"not json-rpc", `{"hello":1}` + "\n", jsonrpc.CodeInvalidRequest},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"ping"}` + "\n", jsonrpc.CodeInvalidRequest},
		{"too long", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 3000) + `"}}` + "\n", jsonrpc.CodeInvalidRequest},
	}
	for _, c := range cases {
		p.send("\n  \r\n") // blank lines are skipped
		p.send(c.line)
		line, err := p.nextRaw()
		if err != nil {
			t.Fatal(err)
		}
		var r rawResponse
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Error == nil || r.Error.Code != c.code || !strings.HasPrefix(line, `{"jsonrpc":"2.0","id":null,`) {
			t.Errorf("%s: got %s, want error %d with \"id\": null", c.name, line, c.code)
		}
	}
	// The session survived all of that.
	p.initialize()
	p.send(`{"jsonrpc":"2.0","id":"str-id","method":"tools/call","params":{"name":"echo","arguments":{"text":"a\"b"}}}` + "\r\n")
	r := p.next()
	if r.ID != "str-id" || r.Error != nil {
		t.Fatalf("tools/call: %+v", r)
	}
	var res struct {
		Content []struct {
			Type, Text string
		} `json:"content"`
		Structured map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != `a"b` || res.Structured["bytes"] != 3.0 {
		t.Errorf("result %s", r.Result)
	}
	// A line cut by EOF is still a message; then the session ends. The
	// output is drained as a client would: whether the ping is answered
	// before the EOF is read is a race, and an unread answer would block
	// the pipe and the end of the session with it.
	p.send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	p.w.Close()
	go io.Copy(io.Discard, p.r)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not end at EOF")
	}
}

// closeRecorder is an input that records Close.
type closeRecorder struct {
	io.Reader
	closed chan struct{}
	once   sync.Once
}

func (c *closeRecorder) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func TestServeStdioStops(t *testing.T) {
	s := newTestServer(t, nil)
	t.Run("ctx ends", func(t *testing.T) {
		sr, cw := io.Pipe()
		defer cw.Close()
		in := &closeRecorder{Reader: sr, closed: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.ServeStdio(ctx, in, io.Discard) }()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("ServeStdio: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("ServeStdio did not stop")
		}
		select {
		case <-in.closed:
		default:
			t.Error("input not closed")
		}
	})
	t.Run("session refused", func(t *testing.T) {
		refused := New(s.rt, func(context.Context) (*kernel.Session, error) { return nil, errors.New("no") }, nil)
		in := &closeRecorder{Reader: strings.NewReader(""), closed: make(chan struct{})}
		if err := refused.ServeStdio(context.Background(), in, io.Discard); err == nil || err.Error() != "no" {
			t.Errorf("ServeStdio: %v", err)
		}
		select {
		case <-in.closed:
		default:
			t.Error("input not closed")
		}
	})
	t.Run("session of another runtime", func(t *testing.T) {
		other := testRuntime(t)
		wrong := New(s.rt, newSessionFunc(other), nil)
		if err := wrong.ServeStdio(context.Background(), strings.NewReader(""), io.Discard); err == nil {
			t.Error("served a session of another runtime")
		}
	})
}

// TestStdioConcurrentCalls: many calls in flight on one connection each get
// their own result through the fast path.
func TestStdioConcurrentCalls(t *testing.T) {
	s := newTestServer(t, nil)
	cs := connectStdio(t, s, nil, "")
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res *mcp.CallToolResult
			var err error
			var want string
			if i%2 == 0 {
				want = fmt.Sprintf("call %d", i)
				res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": want}})
			} else {
				want = replaceInvalid(bigText(i * 3001))
				res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"bytes": i * 3001}})
			}
			if err != nil {
				errs <- err
				return
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != want {
				errs <- fmt.Errorf("call %d: got %d bytes, want %d", i, len(got), len(want))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDirectCallsMatchSDK: the direct call path and the result fast path
// write, byte for byte, the responses the SDK writes.
func TestDirectCallsMatchSDK(t *testing.T) {
	requests := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"<a&b> \"q\" \\ é\u2028"}}}`,
		`{"jsonrpc":"2.0","id":"s-2","method":"tools/call","params":{"name":"big","arguments":{"bytes":70000}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"busy"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_thing","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"no<such>tool","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":[1]}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":5}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"limited","arguments":null}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"limited"}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"limited","_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"bad_structured"}}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"broken_io"}}`,
		`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"rare"}}}`,
		`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`,
		`{"jsonrpc":"2.0","id":16,"method":"tools/list"}`,
	}
	run := func(opts *Options) ([]string, *stdioConn) {
		s := newTestServer(t, opts)
		p := startRaw(t, s, 0)
		p.initialize()
		var out []string
		for _, r := range requests {
			p.send(r + "\n")
			line, err := p.nextRaw()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, line)
		}
		return out, p.c
	}
	sdk, _ := run(&Options{disableDirect: true, disableFastPath: true})
	for name, opts := range map[string]*Options{
		"direct":      {},
		"sdk-request": {disableDirect: true},
	} {
		got, c := run(opts)
		// The paths under test were taken: 12 legacy calls (the one without
		// a name, the one with a progress token, the stateless one and
		// tools/list go to the SDK), and on the SDK's request path the 6
		// successful results.
		if c.direct != nil {
			if n := c.direct.served.Load(); n != 12 {
				t.Errorf("%s: the direct path served %d calls, want 12", name, n)
			}
		} else if c.fast.seq != 6 {
			t.Errorf("%s: the result fast path carried %d results, want 6", name, c.fast.seq)
		}
		for i := range requests {
			if got[i] != sdk[i] {
				t.Errorf("%s, request %d:\n got  %.300s\n want %.300s", name, i+1, got[i], sdk[i])
			}
		}
	}
}

// TestDirectCallCancelled: a direct call the client cancels sees its
// context cancelled and gets no response.
func TestDirectCallCancelled(t *testing.T) {
	s := newTestServer(t, nil)
	p := startRaw(t, s, 0)
	p.initialize()
	p.send(`{"jsonrpc":"2.0","id":"slow-1","method":"tools/call","params":{"name":"slow"}}` + "\n")
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-1","reason":"test"}}` + "\n")
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}` + "\n")
	r := p.next()
	if r.ID != 2.0 {
		t.Fatalf("first response is for %v, want 2 (the cancelled call must get none)", r.ID)
	}
	if p.c.direct.served.Load() != 2 {
		t.Errorf("direct path served %d calls", p.c.direct.served.Load())
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.c.direct.mu.Lock()
		n := len(p.c.direct.inflight)
		p.c.direct.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cancelled call never ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// FuzzStdioRead: whatever the input, Read returns messages or an error and
// answers each malformed line with one valid JSON-RPC error line.
func FuzzStdioRead(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
		"{not json\n[1,2]\n\n",
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}` + "\r\n" + `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}\n",
	} {
		f.Add([]byte(s))
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out testkit.Buffer
		c := newStdioConn(bytes.NewReader(data), &out, log, true, 256)
		defer c.Close()
		for range 1000 {
			msg, err := c.Read(context.Background())
			if err != nil {
				break
			}
			// Answer calls as the SDK does, or Read would wait at the
			// end of the input for the answers owed.
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				c.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "fuzz"}})
			}
		}
		for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if line == "" {
				continue
			}
			if !jsontext.Value(line).IsValid() || !strings.Contains(line, `"error"`) {
				t.Fatalf("bad answer line %q", line)
			}
		}
	})
}

// TestStdioMessageBound: a message of exactly the bound is read, one byte
// more is refused, with either line ending.
func TestStdioMessageBound(t *testing.T) {
	const max = 200
	msg := func(n int) string {
		head := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"`
		tail := `"}}}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	for _, end := range []string{"\n", "\r\n"} {
		for _, c := range []struct {
			n       int
			refused bool
		}{{max, false}, {max + 1, true}} {
			var out testkit.Buffer
			conn := newStdioConn(strings.NewReader(msg(c.n)+end), &out, slog.New(slog.NewTextHandler(io.Discard, nil)), true, max)
			_, err := conn.Read(context.Background())
			conn.Close()
			refused := err != nil && strings.Contains(out.String(), "exceeds")
			if refused != c.refused || (!c.refused && err != nil) {
				t.Errorf("%d bytes, end %q: err %v, output %q", c.n, end, err, out.String())
			}
		}
	}
}

func TestHTTPPendingBound(t *testing.T) {
	h := newTestServer(t, nil).http
	for i := range limits.MCPMaxPendingSessions {
		if !h.reserve(h.open) {
			t.Fatalf("creating request %d refused", i+1)
		}
	}
	if h.reserve(h.open) {
		t.Error("a creating request past limits.MCPMaxPendingSessions admitted")
	}
	h.admit(nil, h.open, nil)
	if !h.reserve(h.open) {
		t.Error("a freed slot was not reusable")
	}
}

// TestStdioAnswersBeforeEOF: a client that sends its requests and closes
// its side still gets every answer it is owed, through the direct path and
// through the SDK, and the session still ends when a call was cancelled.
func TestStdioAnswersBeforeEOF(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts *Options
	}{{"direct", nil}, {"sdk", &Options{disableDirect: true}}} {
		t.Run(mode.name, func(t *testing.T) {
			p := startRaw(t, newTestServer(t, mode.opts), 0)
			p.initialize()
			want := map[string]bool{}
			for i := 1; i <= 8; i++ {
				p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"t%d"}}}`+"\n", i, i))
				want[fmt.Sprint(i)] = true
			}
			p.send(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"big","arguments":{"bytes":300000}}}` + "\n")
			want["big"] = true
			p.send(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}` + "\n")
			want["list"] = true
			p.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"slow","arguments":{}}}` + "\n")
			p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow"}}` + "\n")
			p.w.Close()
			// The server's writes to the pipe complete only when read, so
			// the answers are read while the session ends.
			lines := make(chan string, 64)
			go func() {
				defer close(lines)
				for {
					line, err := p.nextRaw()
					if err != nil {
						return
					}
					lines <- line
				}
			}()
			got := map[string]bool{}
			collect := func(line string) {
				var r rawResponse
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("%v: %.100s", err, line)
				}
				if r.Error != nil && fmt.Sprint(r.ID) != "slow" {
					t.Errorf("id %v: %+v", r.ID, r.Error)
				}
				got[fmt.Sprint(r.ID)] = true
			}
		wait:
			for {
				select {
				case line := <-lines:
					collect(line)
				case err := <-p.done:
					if err != nil {
						t.Fatalf("serve: %v", err)
					}
					break wait
				case <-time.After(30 * time.Second):
					t.Fatal("the session did not end after its input closed")
				}
			}
			p.sw.Close()
			for line := range lines {
				collect(line)
			}
			for id := range want {
				if !got[id] {
					t.Errorf("no answer to %s before the session ended", id)
				}
			}
			// The SDK answers a cancelled call with an error; the direct
			// path, as the specification asks, does not answer it.
			if got["slow"] && mode.opts == nil {
				t.Error("the cancelled call was answered")
			}
		})
	}
}
