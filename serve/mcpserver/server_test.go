package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/limits"
)

// Test tools, registered with kernel.AddTool so these tests depend on no
// capability package.

type echoIn struct {
	Text string `json:"text" jsonschema:"text to echo"`
}

type echoOut struct {
	Echo  string `json:"-"`
	Bytes int    `json:"bytes"`
}

func (o echoOut) ToolText() string { return o.Echo }

type bigIn struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes of text"`
}

type bigOut struct {
	text  string
	Bytes int `json:"bytes"`
}

func (o bigOut) ToolText() string { return o.text }

type plainOut struct {
	OK bool `json:"ok"`
}

var bigTexts sync.Map // size → text, so benchmarks time the transport

// bigText is n bytes of text that exercises quoting: quotes, backslashes,
// control characters, HTML characters, U+2028, multi-byte runes that
// straddle the quoting chunks, and invalid UTF-8.
func bigText(n int) string {
	if s, ok := bigTexts.Load(n); ok {
		return s.(string)
	}
	const unit = "line \"quoted\" \\ back\tslash <a&b> \u2028 é 日本 🎉 \x01\x1f\xff\xfe ok\n"
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(unit)
	}
	s, _ := bigTexts.LoadOrStore(n, b.String()[:n])
	return s.(string)
}

// testRuntime has hot read tools, a hot write tool the test session is not
// granted, a deferred tool, a tool with a small budget and failing tools.
func testRuntime(t testing.TB) *kernel.Runtime {
	t.Helper()
	b := kernel.NewBuilder(nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(kernel.AddTool(b, kernel.Policy{Name: "echo", MaxCalls: limits.HardMaxCalls},
		kernel.Meta{Effect: capability.ReadFile, Hot: true, Summary: "Echo text.", Description: "Echoes text. Example: {\"text\": \"hi\"}"},
		func(_ context.Context, _ *kernel.Call, in echoIn) (echoOut, error) {
			return echoOut{Echo: in.Text, Bytes: len(in.Text)}, nil
		}))
	must(kernel.AddTool(b, kernel.Policy{Name: "big", MaxCalls: limits.HardMaxCalls, MaxOutputBytes: 64 * limits.MiB},
		kernel.Meta{Effect: capability.ReadFile, Hot: true, Description: "Returns bytes of awkward text."},
		func(_ context.Context, _ *kernel.Call, in bigIn) (bigOut, error) {
			s := bigText(in.Bytes)
			return bigOut{text: s, Bytes: len(s)}, nil
		}))
	must(kernel.AddTool(b, kernel.Policy{Name: "write_thing"},
		kernel.Meta{Effect: capability.WriteFile, Hot: true, Description: "Writes a thing."},
		func(context.Context, *kernel.Call, struct{}) (plainOut, error) { return plainOut{OK: true}, nil }))
	must(kernel.AddTool(b, kernel.Policy{Name: "rare_thing"},
		kernel.Meta{Effect: capability.Search, Summary: "Find a rare thing.", Description: "Finds a rare thing, rarely."},
		func(context.Context, *kernel.Call, struct{}) (plainOut, error) { return plainOut{OK: true}, nil }))
	must(kernel.AddTool(b, kernel.Policy{Name: "limited", MaxCalls: 2},
		kernel.Meta{Effect: capability.ReadFile, Hot: true, Description: "Can be called twice per session."},
		func(context.Context, *kernel.Call, struct{}) (plainOut, error) { return plainOut{OK: true}, nil }))
	must(kernel.AddTool(b, kernel.Policy{Name: "busy"},
		kernel.Meta{Effect: capability.ReadFile, Hot: true, Description: "Always busy."},
		func(context.Context, *kernel.Call, struct{}) (plainOut, error) {
			return plainOut{}, &fault.Error{Code: fault.Unavailable, Message: "backend busy", RetryAfter: 1500 * time.Millisecond}
		}))
	must(kernel.AddTool(b, kernel.Policy{Name: "broken_io"},
		kernel.Meta{Effect: capability.ReadFile, Hot: true, Description: "Fails with an i/o error."},
		func(context.Context, *kernel.Call, struct{}) (plainOut, error) {
			return plainOut{}, fault.Wrap(fault.IO, errors.New("read /secret/host/path: EIO"), "reading failed")
		}))
	must(kernel.AddTool(b, kernel.Policy{Name: "slow"},
		kernel.Meta{Effect: capability.ReadFile, Hot: true, Description: "Waits until canceled."},
		func(ctx context.Context, _ *kernel.Call, _ struct{}) (plainOut, error) {
			<-ctx.Done()
			return plainOut{}, ctx.Err()
		}))
	must(b.Register(kernel.Policy{Name: "bad_structured"},
		kernel.Meta{Effect: capability.ReadFile, Hot: true, Description: "Returns invalid structured content."},
		mustObjectSchema(), nil,
		func(context.Context, *kernel.Call) (*kernel.Result, error) {
			return &kernel.Result{Text: "x", Structured: json.RawMessage(`{"a":`)}, nil
		}))
	rt, err := b.Build()
	must(err)
	return rt
}

func mustObjectSchema() *jsonschema.Schema { return &jsonschema.Schema{Type: "object"} }

// replaceInvalid replaces each invalid byte with U+FFFD, as JSON encoders do.
func replaceInvalid(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

// modelEffects are what the test session holds: reading, searching and
// discovery, not writing.
var modelEffects = []capability.Effect{capability.ReadFile, capability.Search, capability.ToolSearch}

func newSessionFunc(rt *kernel.Runtime) func(context.Context) (*kernel.Session, error) {
	return func(context.Context) (*kernel.Session, error) {
		c, err := capability.New("model", modelEffects, capability.Scope{})
		if err != nil {
			return nil, err
		}
		return rt.NewSession("model", []capability.Capability{c}, nil)
	}
}

// transportMode is how a test client reaches the server.
type transportMode struct {
	name    string
	connect func(t *testing.T, s *Server, copts *mcp.ClientOptions, version string) *mcp.ClientSession
}

var modes = []transportMode{
	{"sdk-inmemory", connectSDK},
	{"stdio", connectStdio},
	{"stdio-sdk-request", connectStdioSDKRequest},
	{"http", connectHTTP},
}

// versions are the protocol eras a client may speak: the stateless one
// (server/discover) and the initialize handshake.
var versions = []string{"", "2025-11-25"}

func newClient(copts *mcp.ClientOptions) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts)
}

// connectSDK binds a session and connects it with the SDK's own in-memory
// transport: the path HTTP sessions take, without our stdio transport.
func connectSDK(t *testing.T, s *Server, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ks, err := s.startSession(ctx, s.newSession)
	if err != nil {
		t.Fatal(err)
	}
	b := s.bind(ks, nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := b.ms.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := newClient(copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// connectStdio runs ServeStdio over pipes, as a client that started the
// server would.
func connectStdio(t *testing.T, s *Server, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeStdio(ctx, sr, sw) }()
	cs, err := newClient(copts).Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		cancel()
		sw.Close()
	})
	return cs
}

func newTestServer(t testing.TB, opts *Options) *Server {
	rt := testRuntime(t)
	return New(rt, newSessionFunc(rt), opts)
}

// forEachMode runs f for every transport and protocol era.
func forEachMode(t *testing.T, f func(t *testing.T, connect func(copts *mcp.ClientOptions) *mcp.ClientSession)) {
	for _, m := range modes {
		for _, v := range versions {
			name := m.name + "/" + v
			if v == "" {
				name = m.name + "/latest"
			}
			t.Run(name, func(t *testing.T) {
				s := newTestServer(t, nil)
				f(t, func(copts *mcp.ClientOptions) *mcp.ClientSession { return m.connect(t, s, copts, v) })
			})
		}
	}
}

func listNames(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	if len(r.Content) != 1 {
		t.Fatalf("want one content block, got %d", len(r.Content))
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T", r.Content[0])
	}
	return tc.Text
}

// structured returns the result's structured content as JSON.
func structured(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	data, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// faultOf returns the fault a failed result carries.
func faultOf(t *testing.T, r *mcp.CallToolResult) fault.Report {
	t.Helper()
	if !r.IsError {
		t.Fatalf("want isError, got %q", text(t, r))
	}
	if r.StructuredContent != nil {
		// Clients check it against the tool's output schema, errors included.
		t.Errorf("a failure carries structuredContent %s", structured(t, r))
	}
	data, err := json.Marshal(r.Meta[FaultMetaKey])
	if err != nil {
		t.Fatal(err)
	}
	var fi fault.Report
	if err := json.Unmarshal(data, &fi); err != nil || fi.Code == "" {
		t.Fatalf("_meta[%q] = %s: %v", FaultMetaKey, data, err)
	}
	if text(t, r) != fi.Text() {
		t.Errorf("text %q, want the report's %q", text(t, r), fi.Text())
	}
	return fi
}

func TestListTools(t *testing.T) {
	forEachMode(t, func(t *testing.T, connect func(*mcp.ClientOptions) *mcp.ClientSession) {
		tools := listNames(t, connect(nil))
		for _, name := range []string{"echo", "big", "limited", "busy", "tool_search"} {
			if tools[name] == nil {
				t.Errorf("%s not listed", name)
			}
		}
		if tools["write_thing"] != nil {
			t.Error("write_thing listed without a capability granting write_file")
		}
		if tools["rare_thing"] != nil {
			t.Error("rare_thing listed before discovery")
		}
		echo := tools["echo"]
		if echo == nil {
			return
		}
		// A read-only tool's destructiveHint means nothing, and the title
		// is the tool's own: neither is listed again.
		if a := echo.Annotations; a == nil || !a.ReadOnlyHint || !a.IdempotentHint || a.DestructiveHint != nil || a.OpenWorldHint == nil || *a.OpenWorldHint || a.Title != "" || echo.Title == "" {
			t.Errorf("echo annotations %+v, title %q", echo.Annotations, echo.Title)
		}
		// The listed schemas leave out what tells a client nothing.
		in, _ := json.Marshal(echo.InputSchema)
		if !strings.Contains(string(in), `"text"`) || !strings.Contains(string(in), `"required"`) || strings.Contains(string(in), "additionalProperties") {
			t.Errorf("echo input schema %s", in)
		}
		out, _ := json.Marshal(echo.OutputSchema)
		if !strings.Contains(string(out), `"bytes"`) || strings.Contains(string(out), "additionalProperties") || strings.Contains(string(out), `"required"`) {
			t.Errorf("echo output schema %s", out)
		}
		if !strings.Contains(echo.Description, "Example") {
			t.Errorf("echo description %q", echo.Description)
		}
	})
}

func TestCall(t *testing.T) {
	forEachMode(t, func(t *testing.T, connect func(*mcp.ClientOptions) *mcp.ClientSession) {
		cs := connect(nil)
		r := call(t, cs, "echo", map[string]any{"text": "héllo \"world\"\n"})
		if r.IsError || text(t, r) != "héllo \"world\"\n" {
			t.Errorf("echo: isError=%v text=%q", r.IsError, text(t, r))
		}
		if got := structured(t, r); got != `{"bytes":15}` {
			t.Errorf("echo structured %s", got)
		}
		// Empty and null arguments are "no arguments".
		for _, args := range []any{nil, json.RawMessage("null")} {
			r = call(t, cs, "limited", args)
			if r.IsError {
				t.Errorf("limited(%v): %s", args, text(t, r))
			}
		}
	})
}

func TestFailures(t *testing.T) {
	forEachMode(t, func(t *testing.T, connect func(*mcp.ClientOptions) *mcp.ClientSession) {
		cs := connect(nil)
		cases := []struct {
			tool  string
			args  any
			code  fault.Code
			retry int64
			msg   string
		}{
			{"busy", nil, fault.Unavailable, 2, "backend busy"},
			{"write_thing", nil, fault.Denied, 0, "not granted"},
			{"echo", map[string]any{"text": 5}, fault.InvalidInput, 0, "invalid arguments"},
			{"echo", map[string]any{"text": "x", "extra": 1}, fault.InvalidInput, 0, "invalid arguments"},
			{"broken_io", nil, fault.IO, 0, "i/o failure"},
			{"bad_structured", nil, fault.Internal, 0, "internal error"},
		}
		for _, c := range cases {
			fi := faultOf(t, call(t, cs, c.tool, c.args))
			if fi.Code != c.code || fi.RetryAfterSeconds != c.retry || !strings.Contains(fi.Message, c.msg) {
				t.Errorf("%s: got %+v, want code %s, retry %d, message containing %q", c.tool, fi, c.code, c.retry, c.msg)
			}
			if strings.Contains(fi.Message, "/secret") {
				t.Errorf("%s: host detail reached the client: %q", c.tool, fi.Message)
			}
		}
	})
}

func TestBudgetExhaustion(t *testing.T) {
	forEachMode(t, func(t *testing.T, connect func(*mcp.ClientOptions) *mcp.ClientSession) {
		cs := connect(nil)
		for i := range 2 {
			if r := call(t, cs, "limited", nil); r.IsError {
				t.Fatalf("call %d: %s", i+1, text(t, r))
			}
		}
		fi := faultOf(t, call(t, cs, "limited", nil))
		if fi.Code != fault.Limit || !strings.Contains(fi.Message, "budget") {
			t.Errorf("third call: %+v", fi)
		}
	})
}

func TestProtocolErrors(t *testing.T) {
	forEachMode(t, func(t *testing.T, connect func(*mcp.ClientOptions) *mcp.ClientSession) {
		cs := connect(nil)
		cases := []struct {
			name string
			args any
		}{
			{"no_such_tool", nil},
			{"echo", []int{1}},
			{"echo", "text"},
		}
		for _, c := range cases {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.name, Arguments: c.args})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("%s(%v): want an invalid-params protocol error, got %v", c.name, c.args, err)
			}
		}
		// The session goes on.
		if r := call(t, cs, "echo", map[string]any{"text": "still here"}); text(t, r) != "still here" {
			t.Errorf("after protocol errors: %q", text(t, r))
		}
	})
}

func TestToolSearchActivates(t *testing.T) {
	forEachMode(t, func(t *testing.T, connect func(*mcp.ClientOptions) *mcp.ClientSession) {
		changed := make(chan struct{}, 4)
		cs := connect(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			changed <- struct{}{}
		}})
		r := call(t, cs, "tool_search", map[string]any{"query": "rare"})
		if r.IsError || !strings.Contains(text(t, r), "rare_thing") {
			t.Fatalf("tool_search: %q", text(t, r))
		}
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("no notifications/tools/list_changed")
		}
		if listNames(t, cs)["rare_thing"] == nil {
			t.Error("rare_thing not listed after tool_search")
		}
		if r := call(t, cs, "rare_thing", nil); r.IsError {
			t.Errorf("rare_thing: %s", text(t, r))
		}
	})
}

// TestDeferredToolIsCallable: the list is not the boundary; a granted tool
// discovery has not listed yet still goes through the kernel.
func TestDeferredToolIsCallable(t *testing.T) {
	s := newTestServer(t, nil)
	cs := connectSDK(t, s, nil, "")
	if r := call(t, cs, "rare_thing", nil); r.IsError {
		t.Errorf("rare_thing: %s", text(t, r))
	}
}

func TestBigResultSamePaths(t *testing.T) {
	// The fast path must give the client exactly what the SDK's encoder
	// gives, for text that needs every kind of quoting and crosses the
	// quoting chunks.
	for _, n := range []int{0, 1, escapeChunkBytes - 1, escapeChunkBytes + 3, 3*escapeChunkBytes + 7, flushBytes + 3*escapeChunkBytes} {
		var got []string
		for _, mode := range []transportMode{{"sdk", connectSDK}, {"stdio", connectStdio}, {"stdio-sdk-request", connectStdioSDKRequest}, {"stdio-nofast", connectStdioNoFast}} {
			s := newTestServer(t, nil)
			cs := mode.connect(t, s, nil, "2025-11-25")
			r := call(t, cs, "big", map[string]any{"bytes": n})
			if r.IsError {
				t.Fatalf("%s: %s", mode.name, text(t, r))
			}
			got = append(got, text(t, r)+"|"+structured(t, r))
		}
		want := replaceInvalid(bigText(n))
		for i, g := range got {
			if !strings.HasPrefix(g, want+"|") {
				t.Errorf("n=%d path %d: text differs", n, i)
			}
			if g != got[0] {
				t.Errorf("n=%d path %d differs from the SDK path", n, i)
			}
		}
	}
}

// connectStdioNoFast serves stdio through the SDK alone.
func connectStdioNoFast(t *testing.T, s *Server, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	s.opts.disableFastPath, s.opts.disableDirect = true, true
	return connectStdio(t, s, copts, version)
}

// connectStdioSDKRequest serves stdio calls through the SDK's request
// handling, with the result fast path.
func connectStdioSDKRequest(t *testing.T, s *Server, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	s.opts.disableDirect = true
	return connectStdio(t, s, copts, version)
}

// TestAnnotations: destructiveHint is listed only where it says
// something: a writer that destroys nothing.
func TestAnnotations(t *testing.T) {
	for _, c := range []struct {
		h           catalog.Annotations
		destructive *bool
	}{
		{catalog.Annotations{ReadOnly: true, Idempotent: true}, nil},
		{catalog.Annotations{Destructive: true}, nil},
		{catalog.Annotations{Destructive: false, Idempotent: true}, new(bool)},
	} {
		a := annotations(c.h)
		if (a.DestructiveHint == nil) != (c.destructive == nil) || a.DestructiveHint != nil && *a.DestructiveHint != *c.destructive ||
			a.ReadOnlyHint != c.h.ReadOnly || a.IdempotentHint != c.h.Idempotent || a.OpenWorldHint == nil || *a.OpenWorldHint != c.h.OpenWorld || a.Title != "" {
			t.Errorf("annotations(%+v) = %+v", c.h, a)
		}
	}
}
