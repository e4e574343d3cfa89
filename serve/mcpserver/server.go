package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capkit/capkit/internal/clip"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/limits"
)

// Options configure a Server. The zero value is usable: a loopback-only
// server without a bearer token, named "capkit".
type Options struct {
	// Name and Version identify the server to clients. They default to
	// "capkit" and "devel".
	Name    string
	Version string
	// Instructions are offered to clients when a session starts.
	Instructions string
	// SessionInstructions, when set, adds what it returns for a session's
	// kernel session to Instructions (the host tells the model its roots).
	SessionInstructions func(*kernel.Session) string
	// ClientRoots lets a client that declares the roots capability narrow
	// each session's roots to its own (roots/list): the file tools then
	// reach only where the granted roots and the client's roots meet, never
	// further than granted (see clientRoots). Off, client roots are not
	// asked for.
	ClientRoots bool
	// Log receives transport and protocol failures: malformed messages,
	// refused HTTP requests, sessions that could not start. It never
	// receives tool arguments or results. Nil discards.
	Log *slog.Logger

	// BearerToken, when set, is required on every HTTP request as
	// "Authorization: Bearer <token>" (compared in constant time). Stdio is
	// not affected: whoever holds the pipe started the server.
	BearerToken string
	// Tenants, instead of BearerToken, serve several actors over HTTP: a
	// request must carry one of their tokens, its MCP session is made by
	// that tenant's NewSession, and a session refuses requests carrying
	// another tenant's token. Stdio is not affected.
	Tenants []Tenant
	// AllowedHosts are Host header values accepted over HTTP besides the
	// loopback names (localhost, 127.0.0.0/8, ::1): a bare name matches any
	// port, "name:port" only that port. Anything else is refused, which is
	// what defeats DNS rebinding.
	AllowedHosts []string
	// AllowedOrigins are Origin header values ("scheme://host[:port]")
	// accepted over HTTP besides loopback origins. Requests without Origin
	// (non-browser clients) are accepted.
	AllowedOrigins []string
	// AllowNonLoopback lets Serve and ListenAndServe use an address other
	// than a loopback one. The risk: anyone who can reach the address can
	// drive the tools, bounded only by BearerToken (sent in clear over
	// plain HTTP) and AllowedHosts. Set a token, and put TLS in front.
	AllowNonLoopback bool
	// OnServing, when set, is called by Serve (and ListenAndServe) with
	// the listener's address once its checks have passed and it serves
	// connections there: the moment to tell a person the server is up.
	OnServing func(net.Addr)
	// MaxSessions bounds live HTTP sessions; zero means
	// limits.MCPDefaultMaxSessions. When all are live, a new session evicts
	// the least recently used idle one; with none idle it is refused (503).
	MaxSessions int
	// SessionIdleTimeout closes an HTTP session after this long without a
	// request; zero means limits.MCPDefaultSessionIdle.
	SessionIdleTimeout time.Duration
	// MaxInFlightBytes bounds the bytes of HTTP request bodies held at once
	// across all connections; zero means limits.MCPDefaultInFlightBytes.
	// Peak memory for requests is about this times the decoding overhead.
	MaxInFlightBytes int64
	// BodyTimeout bounds how long a client may take to send one request
	// body; zero means limits.MCPDefaultBodyTimeout.
	BodyTimeout time.Duration
	// Stateless also serves the 2026-07-28 stateless protocol: requests
	// that carry that Mcp-Protocol-Version (or a later one) and no session
	// id take no session slot. They all share one kernel session, so its
	// call budgets and its record of files read are common to every
	// stateless caller: turn it on where one client uses the server.
	Stateless bool

	// disableFastPath makes stdio results go through the SDK's encoder, and
	// disableDirect stdio calls through the SDK's request handling, for the
	// tests and benchmarks that compare the paths.
	disableFastPath bool
	disableDirect   bool
}

// Server serves one kernel runtime's tools over MCP. It is safe for
// concurrent use: ServeStdio may run for several connections at once, and
// the HTTP handler serves many sessions.
//
// What it guarantees: a client reaches tools only through the kernel
// session newSession gave its MCP session, so it is held to that session's
// capabilities and budgets and every call is audited; two MCP sessions
// never share a kernel session. What it does not: it decides nothing about
// who the actor is (newSession does), and over stdio it trusts whoever
// holds the pipe to be the client that started it.
type Server struct {
	rt         *kernel.Runtime
	newSession func(context.Context) (*kernel.Session, error)
	opts       Options
	impl       *mcp.Implementation
	log        *slog.Logger

	http *httpHandler
}

// New returns a Server for rt. newSession creates the kernel session of
// each new MCP session (it decides the actor and the capabilities); its ctx
// is ServeStdio's for stdio and the initializing request's for HTTP. The
// sessions it returns must belong to rt. opts may be nil.
func New(rt *kernel.Runtime, newSession func(ctx context.Context) (*kernel.Session, error), opts *Options) *Server {
	s := &Server{rt: rt, newSession: newSession}
	if opts != nil {
		s.opts = *opts
		s.opts.AllowedHosts = slices.Clone(opts.AllowedHosts)
		s.opts.AllowedOrigins = slices.Clone(opts.AllowedOrigins)
		s.opts.Tenants = slices.Clone(opts.Tenants)
	}
	if s.opts.Name == "" {
		s.opts.Name = "capkit"
	}
	if s.opts.Version == "" {
		s.opts.Version = "devel"
	}
	if s.opts.MaxSessions <= 0 {
		s.opts.MaxSessions = limits.MCPDefaultMaxSessions
	}
	if s.opts.SessionIdleTimeout <= 0 {
		s.opts.SessionIdleTimeout = limits.MCPDefaultSessionIdle
	}
	if s.opts.MaxInFlightBytes <= 0 {
		s.opts.MaxInFlightBytes = limits.MCPDefaultInFlightBytes
	}
	if s.opts.BodyTimeout <= 0 {
		s.opts.BodyTimeout = limits.MCPDefaultBodyTimeout
	}
	s.log = s.opts.Log
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.impl = &mcp.Implementation{Name: s.opts.Name, Version: s.opts.Version}
	s.http = newHTTPHandler(s)
	return s
}

// startSession creates the kernel session for a new MCP session with
// newSession (the server's, or a tenant's).
func (s *Server) startSession(ctx context.Context, newSession func(context.Context) (*kernel.Session, error)) (*kernel.Session, error) {
	if newSession == nil {
		return nil, errors.New("mcpserver: no newSession function was given")
	}
	ks, err := newSession(ctx)
	if err != nil {
		return nil, err
	}
	if ks == nil || ks.Runtime() != s.rt {
		return nil, errors.New("mcpserver: newSession returned a session of another runtime")
	}
	return ks, nil
}

// binding ties one MCP session (its own mcp.Server) to one kernel session.
type binding struct {
	srv  *Server
	ks   *kernel.Session
	ms   *mcp.Server
	fast *fastPath // nil unless the transport splices results

	roots *clientRoots // nil unless Options.ClientRoots

	mu     sync.Mutex
	listed map[string]bool
	// waited: the client's first tools/list waited for the tools whose
	// offer was not known yet (limits.UpstreamListWait).
	waited bool
}

// bind creates the mcp.Server of one session, listing the session's specs
// and following its activations.
func (s *Server) bind(ks *kernel.Session, fast *fastPath) *binding {
	b := &binding{srv: s, ks: ks, fast: fast, listed: map[string]bool{}}
	opts := &mcp.ServerOptions{
		Instructions: s.instructions(ks),
		Logger:       s.log,
		// Tools only; no logging capability (the SDK's historical default).
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		// The tool list is this session's: no shared cache may serve it.
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" },
	}
	if s.opts.ClientRoots {
		b.roots = newClientRoots(ks, s.log)
		opts.RootsListChangedHandler = func(context.Context, *mcp.RootsListChangedRequest) { b.roots.changed() }
	}
	b.ms = mcp.NewServer(s.impl, opts)
	b.ms.AddReceivingMiddleware(b.route)
	b.sync()
	ks.OnToolsChanged(b.sync)
	return b
}

// instructions are what a session's client is told when it starts.
func (s *Server) instructions(ks *kernel.Session) string {
	text := s.opts.Instructions
	if s.opts.SessionInstructions != nil {
		if more := s.opts.SessionInstructions(ks); more != "" {
			if text != "" {
				text += "\n\n"
			}
			text += more
		}
	}
	return text
}

// sync makes the MCP tool list what the kernel session now offers:
// tools activated or restored are added, tools withdrawn (another
// server's, whose definition changed) removed. The SDK announces each
// change with notifications/tools/list_changed. A tool whose schemas do
// not resolve (a defect of its registration) is left out and logged as an
// error; calling it fails as an internal error.
func (b *binding) sync() {
	b.mu.Lock()
	defer b.mu.Unlock()
	specs := b.ks.Specs()
	var gone []string
	for name := range b.listed {
		if !slices.ContainsFunc(specs, func(e *catalog.Entry) bool { return e.Name == name }) {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		for _, name := range gone {
			delete(b.listed, name)
		}
		b.ms.RemoveTools(gone...)
	}
	for _, e := range specs {
		if b.listed[e.Name] {
			continue
		}
		b.listed[e.Name] = true
		t, err := Tool(e)
		if err != nil {
			b.srv.log.Error("mcp: tool left out of the list", slog.String("tool", e.Name), slog.String("error", err.Error()))
			continue
		}
		b.ms.AddTool(t, b.handle)
	}
}

// Tool describes an entry to MCP clients, as tools/list gives it, once its
// schemas resolve.
// They go to the SDK as schemas, not encoded: it encodes them when it lists
// the tools, and would decode encoded ones into maps at every AddTool (the
// most of a session's set-up). Annotations come from the entry's hints.
func Tool(e *catalog.Entry) (*mcp.Tool, error) {
	in, out, err := e.Listed()
	if err != nil {
		return nil, err
	}
	h := e.Hints()
	t := &mcp.Tool{
		Name:        e.Name,
		Title:       h.Title,
		Description: e.Description,
		InputSchema: in,
		Annotations: annotations(h),
	}
	if out != nil {
		t.OutputSchema = out
	}
	return t, nil
}

// annotations are h as MCP hints, less what a client already assumes or
// has: the title is the tool's own, and destructiveHint is left out where
// it is the protocol's default (true) or means nothing (a read-only tool).
func annotations(h catalog.Annotations) *mcp.ToolAnnotations {
	a := &mcp.ToolAnnotations{ReadOnlyHint: h.ReadOnly, IdempotentHint: h.Idempotent, OpenWorldHint: &h.OpenWorld}
	if !h.ReadOnly && !h.Destructive {
		a.DestructiveHint = &h.Destructive
	}
	return a
}

// route sends every tools/call to the kernel, listed or not: the kernel,
// not the list, decides what a session may call (a tool it is not granted
// is denied; a granted one that discovery has not listed yet runs).
func (b *binding) route(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" {
			return b.handle(ctx, r)
		}
		if method == "tools/list" {
			b.firstList(ctx)
		}
		return next(ctx, method, req)
	}
}

// firstList makes the session's first tools/list wait, at most
// limits.UpstreamListWait, for the tools whose offer is not known yet
// (another server's, starting), so that a client that lists once sees
// them; later ones arrive with notifications/tools/list_changed.
func (b *binding) firstList(ctx context.Context) {
	b.mu.Lock()
	waited := b.waited
	b.waited = true
	b.mu.Unlock()
	if waited {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, limits.UpstreamListWait)
	defer cancel()
	b.ks.SpecsWithin(ctx) // what it waited for is known now
	b.sync()
}

// handle runs one tools/call through the kernel (the SDK's path).
func (b *binding) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params
	if p == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call needs params"}
	}
	b.roots.refresh(ctx, req.Session)
	ctx = withConfirm(ctx, req.Session)
	if tok := p.GetProgressToken(); tok != nil {
		ctx = kernel.WithProgress(ctx, progressTo(ctx, req.Session, tok))
	}
	res, failed, err := b.call(withRequestID(ctx, req.Extra), p.Name, p.Arguments)
	switch {
	case err != nil:
		return nil, err
	case failed != nil:
		return failed, nil
	case res.Image != nil || res.Content != nil:
		return b.blockResult(res), nil
	case b.fast != nil:
		return b.fast.placeholder(res), nil
	}
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}}
	if len(res.Structured) > 0 {
		r.StructuredContent = res.Structured
	}
	return r, nil
}

// call runs one call through the kernel. It returns the kernel's result, or
// the isError result of a failure, or a protocol error (unknown tool,
// arguments that are not an object).
func (b *binding) call(ctx context.Context, name string, args json.RawMessage) (*kernel.Result, *mcp.CallToolResult, error) {
	args, perr := callArgs(args)
	if perr != nil {
		return nil, nil, perr
	}
	res, err := b.ks.Call(ctx, name, args)
	return b.outcome(name, res, err)
}

// start is call without waiting: done receives what call would return,
// once, as kernel.Session.Start delivers it.
func (b *binding) start(ctx context.Context, name string, args json.RawMessage, done func(*kernel.Result, *mcp.CallToolResult, error)) {
	args, perr := callArgs(args)
	if perr != nil {
		done(nil, nil, perr)
		return
	}
	b.ks.Start(ctx, name, args, func(res *kernel.Result, err error) {
		done(b.outcome(name, res, err))
	})
}

// callArgs checks that args are an object or absent (null, nothing).
func callArgs(args json.RawMessage) (json.RawMessage, error) {
	switch first := firstByte(args); first {
	case 0:
		return nil, nil
	case 'n': // null: no arguments
		if strings.TrimSpace(string(args)) != "null" {
			return nil, errArgsNotObject
		}
		return nil, nil
	case '{':
		return args, nil
	}
	return nil, errArgsNotObject
}

// outcome turns what the kernel returned into call's results.
func (b *binding) outcome(name string, res *kernel.Result, err error) (*kernel.Result, *mcp.CallToolResult, error) {
	if err != nil {
		if _, _, known := b.ks.Runtime().Catalog().Lookup(name); !known {
			// The kernel audited the attempt; to the client an unknown tool
			// is a protocol error, as the SDK reports it.
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", clip.Text(name))}
		}
		return nil, b.faultResult(err), nil
	}
	if len(res.Structured) > 0 && !jsontext.Value(res.Structured).IsValid() {
		// A raw handler's bug; encoding it would break the response.
		res.Release()
		b.srv.log.Error("mcp: tool returned invalid structured content", slog.String("tool", name))
		return nil, b.faultResult(fault.New(fault.Internal, "tool %s returned invalid structured content", name)), nil
	}
	return res, nil, nil
}

var errArgsNotObject = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call arguments must be a JSON object"}

// firstByte is the first non-space byte of a JSON value, or 0.
func firstByte(v json.RawMessage) byte {
	for _, c := range v {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// FaultMetaKey names the _meta member of a failed call's result that holds
// the failure in machine-readable form (a fault.Report).
const FaultMetaKey = "capkit/fault"

// faultResult is the isError result of a failed call: the text is the
// report's ("code: message", the retry hint, then the detail: what a
// command printed before it failed), and _meta carries the report itself. Not structuredContent: clients validate that against the
// tool's output schema, errors included, and a failure matches none. An
// untrusted session gets the public message only (the kernel has already
// reduced its own failures to that).
func (b *binding) faultResult(err error) *mcp.CallToolResult {
	rep := fault.As(err).Report(b.ks.Trusted())
	return &mcp.CallToolResult{
		Meta:    mcp.Meta{FaultMetaKey: rep},
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: rep.Text()}},
	}
}
