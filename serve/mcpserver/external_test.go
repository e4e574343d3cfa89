package mcpserver

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
)

// externalRuntime has a tool another server defines (ext__tool), offered
// while *withdrawn is false, a tool answering with content blocks of
// several types, and a tool reporting progress; sessions made with it are
// recorded in *sessions and counted closed in *closed.
type externalFixture struct {
	withdrawn atomic.Bool
	closed    atomic.Int32
	mu        sync.Mutex
	sessions  []*kernel.Session
}

func (f *externalFixture) server(t *testing.T) *Server {
	t.Helper()
	b := kernel.NewBuilder(nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ext := capability.Upstream("ext")
	must(b.Register(kernel.Policy{Name: "ext__tool"}, kernel.Meta{Effect: ext, Origin: "upstream ext", Description: "An external tool.",
		Offered: func(context.Context, *kernel.Session) error {
			if f.withdrawn.Load() {
				return fault.New(fault.Integrity, "changed")
			}
			return nil
		}}, mustObjectSchema(), nil, func(context.Context, *kernel.Call) (*kernel.Result, error) {
		return &kernel.Result{Text: "ext"}, nil
	}))
	must(b.Register(kernel.Policy{Name: "blocks"}, kernel.Meta{Effect: ext, Hot: true, Description: "Content blocks."}, mustObjectSchema(), nil,
		func(context.Context, *kernel.Call) (*kernel.Result, error) {
			return &kernel.Result{Text: "one", Structured: json.RawMessage(`{"n":1}`), Content: []json.RawMessage{
				json.RawMessage(`{"type":"text","text":"one"}`),
				json.RawMessage(`{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}`),
				json.RawMessage(`{"type":"resource_link","uri":"file:///x","name":"x"}`),
				json.RawMessage(`{"type":"audio","mimeType":"audio/wav","data":"UklGRg=="}`),
			}}, nil
		}))
	must(b.Register(kernel.Policy{Name: "progress"}, kernel.Meta{Effect: ext, Hot: true, Description: "Reports progress."}, mustObjectSchema(), nil,
		func(ctx context.Context, _ *kernel.Call) (*kernel.Result, error) {
			if p := kernel.ProgressOf(ctx); p != nil {
				p(1, 3, "one")
				p(2, 3, "two")
				return &kernel.Result{Text: "reported"}, nil
			}
			return &kernel.Result{Text: "no token"}, nil
		}))
	rt, err := b.Build()
	must(err)
	return New(rt, func(context.Context) (*kernel.Session, error) {
		c, _ := capability.New("model", []capability.Effect{ext, capability.ToolSearch}, capability.Scope{})
		ks, err := rt.NewSession("model", []capability.Capability{c}, nil)
		if err == nil {
			ks.OnClose(func() { f.closed.Add(1) })
			f.mu.Lock()
			f.sessions = append(f.sessions, ks)
			f.mu.Unlock()
		}
		return ks, err
	}, nil)
}

func (f *externalFixture) changed() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.sessions {
		s.ToolsChanged()
	}
}

// TestWithdrawnLeavesTheList: a tool withdrawn while listed leaves the
// session's tools/list and the client gets notifications/tools/list_changed;
// restored, it comes back with another.
func TestWithdrawnLeavesTheList(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f := &externalFixture{}
			changed := make(chan struct{}, 8)
			cs := m.connect(t, f.server(t), &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				changed <- struct{}{}
			}}, "2025-11-25")
			wait := func(what string) {
				t.Helper()
				select {
				case <-changed:
				case <-time.After(10 * time.Second):
					t.Fatalf("no list_changed after %s", what)
				}
			}
			call(t, cs, "tool_search", map[string]any{"query": "external"})
			wait("tool_search")
			if listNames(t, cs)["ext__tool"] == nil {
				t.Fatal("ext__tool not listed after tool_search")
			}
			f.withdrawn.Store(true)
			f.changed()
			wait("withdrawal")
			if listNames(t, cs)["ext__tool"] != nil {
				t.Error("a withdrawn tool is still listed")
			}
			f.withdrawn.Store(false)
			f.changed()
			wait("restoring")
			if listNames(t, cs)["ext__tool"] == nil {
				t.Error("a restored tool is not listed")
			}
		})
	}
}

// TestContentBlocksPassThrough: a result given as content blocks reaches
// the client as those blocks, in order, with its structured content, on
// every path.
func TestContentBlocksPassThrough(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f := &externalFixture{}
			cs := m.connect(t, f.server(t), nil, "2025-11-25")
			r := call(t, cs, "blocks", nil)
			if r.IsError || len(r.Content) != 4 {
				t.Fatalf("result %+v", r)
			}
			if tc, ok := r.Content[0].(*mcp.TextContent); !ok || tc.Text != "one" {
				t.Errorf("block 0: %#v", r.Content[0])
			}
			if im, ok := r.Content[1].(*mcp.ImageContent); !ok || im.MIMEType != "image/png" || string(im.Data) != "\x89PNG\r\n\x1a\n" {
				t.Errorf("block 1: %#v", r.Content[1])
			}
			if rl, ok := r.Content[2].(*mcp.ResourceLink); !ok || rl.URI != "file:///x" {
				t.Errorf("block 2: %#v", r.Content[2])
			}
			if au, ok := r.Content[3].(*mcp.AudioContent); !ok || au.MIMEType != "audio/wav" {
				t.Errorf("block 3: %#v", r.Content[3])
			}
			if got, _ := json.Marshal(r.StructuredContent); string(got) != `{"n":1}` {
				t.Errorf("structured %s", got)
			}
		})
	}
}

// TestProgressPassesThrough: a call with a progress token gets the
// handler's reports as notifications/progress with its token; one without
// gives the handler no Progress.
func TestProgressPassesThrough(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f := &externalFixture{}
			var mu sync.Mutex
			var got []string
			cs := m.connect(t, f.server(t), &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				got = append(got, r.Params.Message+":"+fmtToken(r.Params.ProgressToken))
				mu.Unlock()
			}}, "2025-11-25")
			p := &mcp.CallToolParams{Name: "progress"}
			p.SetProgressToken("tok-1")
			res, err := cs.CallTool(context.Background(), p)
			if err != nil || text(t, res) != "reported" {
				t.Fatalf("%v %v", res, err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				mu.Lock()
				n := len(got)
				mu.Unlock()
				if n >= 2 || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			mu.Lock()
			if len(got) != 2 || got[0] != "one:tok-1" || got[1] != "two:tok-1" {
				t.Errorf("progress seen: %v", got)
			}
			mu.Unlock()
			if r := call(t, cs, "progress", nil); text(t, r) != "no token" {
				t.Errorf("without a token: %s", text(t, r))
			}
		})
	}
}

func fmtToken(v any) string {
	s, _ := v.(string)
	return s
}

// TestSessionClosedWhenClientGoes: the kernel session of a stdio
// connection or an HTTP session is closed when its client goes.
func TestSessionClosedWhenClientGoes(t *testing.T) {
	for _, m := range modes {
		if m.name == "sdk-inmemory" {
			continue // binds without a front door's life
		}
		t.Run(m.name, func(t *testing.T) {
			f := &externalFixture{}
			s := f.server(t)
			cs := m.connect(t, s, nil, "2025-11-25")
			call(t, cs, "blocks", nil)
			cs.Close()
			deadline := time.Now().Add(10 * time.Second)
			for f.closed.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if f.closed.Load() != 1 {
				t.Errorf("%d kernel sessions closed, want 1", f.closed.Load())
			}
		})
	}
}

// TestFirstListWaitsForStartingTools: a tool whose offer is not known
// when the session begins (its server still starting) is in the client's
// first tools/list once known within limits.UpstreamListWait: a client
// that lists once (the Inspector's command line) sees it. Its Offered
// learns the answer only when asked while the caller can wait.
func TestFirstListWaitsForStartingTools(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			b := kernel.NewBuilder(nil)
			ext := capability.Upstream("ext")
			var known atomic.Bool
			if err := b.Register(kernel.Policy{Name: "ext__starting"}, kernel.Meta{Effect: ext, Hot: true, Description: "Starts slowly.",
				Offered: func(ctx context.Context, _ *kernel.Session) error {
					if ctx.Err() == nil {
						known.Store(true)
					}
					if !known.Load() {
						return fault.New(fault.Unavailable, "starting")
					}
					return nil
				}}, mustObjectSchema(), nil, func(context.Context, *kernel.Call) (*kernel.Result, error) {
				return &kernel.Result{Text: "started"}, nil
			}); err != nil {
				t.Fatal(err)
			}
			rt, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			s := New(rt, func(context.Context) (*kernel.Session, error) {
				c, _ := capability.New("model", []capability.Effect{ext}, capability.Scope{})
				return rt.NewSession("model", []capability.Capability{c}, nil)
			}, nil)
			cs := m.connect(t, s, nil, "2025-11-25")
			if listNames(t, cs)["ext__starting"] == nil {
				t.Fatal("the first tools/list did not wait for a starting tool")
			}
		})
	}
}
