package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/kernel"
)

// directCalls is the stdio transport's path for the common tools/call: a
// session initialized with the initialize handshake, calling a tool with
// arguments and nothing else. The transport runs such a call itself
// instead of handing it to the SDK, and writes the response the SDK would
// have written (TestDirectCallsMatchSDK compares them byte for byte).
//
// Why: for a small call, most of the server's CPU went to the SDK's
// handling of the request: it decodes the params twice with a decoder that
// allocates a 32 KiB buffer each time (so the garbage collector ran every
// few dozen calls), and runs each call on a fresh goroutine whose stack
// grows. A direct call is started with kernel.Session.Start, whose worker
// runs the handler and writes the response: the call changes goroutines
// once, where waiting for Session.Call on a goroutine of the transport
// made it change four times, each change waking another thread
// (BenchmarkStdioSmallCall; figures in bench/RESULTS.md). Anything else (other methods, the stateless 2026-07-28 protocol,
// _meta keys of the protocol, multi-round-trip fields, a session not yet
// initialized, params the fast decoding refuses, a progress token) goes
// to the SDK, which answers it as usual, errors included. A direct call the client cancels
// (notifications/cancelled) sees its context cancelled and gets no
// response, as the protocol asks (the SDK answers with an error instead).
type directCalls struct {
	ctx context.Context // the connection's
	b   *binding
	ss  atomic.Pointer[mcp.ServerSession]

	mu       sync.Mutex
	inflight map[jsonrpc.ID]*directCall
	wg       sync.WaitGroup
	served   atomic.Int64 // for tests
}

func newDirectCalls(ctx context.Context, b *binding) *directCalls {
	return &directCalls{ctx: ctx, b: b, inflight: map[jsonrpc.ID]*directCall{}}
}

// directCall is one call in flight.
type directCall struct {
	d      *directCalls
	c      *stdioConn
	id     jsonrpc.ID
	cancel context.CancelFunc
	// dropped is set when the client cancelled the call: as the protocol
	// asks, no response is sent.
	dropped atomic.Bool
}

// callParams are the tools/call params the direct path accepts; the
// multi-round-trip members only to refuse them.
type callParams struct {
	Meta           map[string]jsontext.Value `json:"_meta"`
	Name           *string                   `json:"name"`
	Arguments      jsontext.Value            `json:"arguments"`
	InputResponses jsontext.Value            `json:"inputResponses"`
	RequestState   jsontext.Value            `json:"requestState"`
}

// take runs req if it is a call the direct path serves, reporting whether
// it did; the response is written by c when the call ends.
func (d *directCalls) take(c *stdioConn, req *jsonrpc.Request) bool {
	ss := d.ss.Load()
	if ss == nil {
		// The session's own mcp.Server has this one session.
		for x := range d.b.ms.Sessions() {
			ss = x
		}
		if ss == nil {
			return false
		}
		d.ss.Store(ss)
	}
	if ss.InitializeParams() == nil || d.b.roots.pending() {
		return false // the SDK's path lists the client's roots first
	}
	var p callParams
	if jsonv2.Unmarshal(req.Params, &p) != nil || p.Name == nil || p.InputResponses != nil || p.RequestState != nil {
		return false
	}
	for k := range p.Meta {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") || k == "progressToken" {
			// The stateless protocol's per-request metadata, or a call
			// whose progress goes to the client through the SDK's session.
			return false
		}
	}
	d.mu.Lock()
	if _, dup := d.inflight[req.ID]; dup {
		d.mu.Unlock()
		return false
	}
	ctx, cancel := context.WithCancel(withConfirm(kernel.WithRequest(d.ctx, auditRequestID(req.ID)), ss))
	dc := &directCall{d: d, c: c, id: req.ID, cancel: cancel}
	d.inflight[req.ID] = dc
	d.wg.Add(1)
	d.mu.Unlock()
	d.served.Add(1)
	// The kernel runs the handler on one of its workers and calls ended
	// there (or at the deadline), which writes the response: one hand-off
	// per call, while this goroutine goes back to reading.
	d.b.start(ctx, *p.Name, json.RawMessage(p.Arguments), dc.ended)
	return true
}

// ended writes the outcome of a call, unless the client cancelled it.
func (dc *directCall) ended(res *kernel.Result, failed *mcp.CallToolResult, err error) {
	d := dc.d
	defer d.wg.Done()
	d.mu.Lock()
	delete(d.inflight, dc.id)
	d.mu.Unlock()
	dc.cancel()
	if dc.dropped.Load() {
		if res != nil {
			res.Release()
		}
		return
	}
	dc.c.writeDirect(dc.id, res, failed, err)
}

// cancelled cancels the direct call a notifications/cancelled names, if it
// is one.
func (d *directCalls) cancelled(params json.RawMessage) {
	id, ok := cancelledID(params)
	if !ok {
		return
	}
	d.mu.Lock()
	dc := d.inflight[id]
	d.mu.Unlock()
	if dc != nil {
		dc.dropped.Store(true)
		dc.cancel()
	}
}

// cancelledID is the request a notifications/cancelled names.
func cancelledID(params json.RawMessage) (jsonrpc.ID, bool) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if jsonv2.Unmarshal(params, &p) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	return id, err == nil
}

// stop cancels the calls in flight and waits for them to end.
func (d *directCalls) stop() {
	d.mu.Lock()
	for _, dc := range d.inflight {
		dc.cancel()
	}
	d.mu.Unlock()
	d.wg.Wait()
}
