// Package gateway puts other MCP servers' tools behind capkit's kernel:
// each upstream (a stdio server capkit starts, contained by default, or a
// Streamable HTTP endpoint dialled under an HTTP policy) is reached with
// the MCP Go SDK's client (a stdio upstream's tools/call on capkit's own
// connection beneath it: pipe.go), and its tools are offered as
// NAME__TOOL to the sessions granted capability.Upstream(NAME), through
// kernel.Session.Call like every other tool (tools.go: the only file here
// that knows the kernel).
//
// What is offered is pinned. The catalog's entries come from the lock
// file (Lock: the definitions a person approved, each with its SHA-256),
// not from what an upstream says; an upstream's live listing decides,
// entry by entry, whether it is offered now: the same definition is
// offered, a changed or missing one is not, and a call to it fails with
// integrity naming what changed and `capkit upstream review`. A tool the
// lock does not hold (new, or renamed) is no entry at all. When an
// upstream sends notifications/tools/list_changed, it is listed again and
// the rule applied at once, and the sessions watching it are told (their
// clients get list_changed).
//
// Descriptions and results are the upstream's: untrusted data, shown as
// that tool's and never as capkit's (its instructions are never read).
// A result is checked against the upstream's own declared output schema
// (integrity when it does not match); its content blocks pass through as
// they are within the output bound; isError is the upstream's failure
// (fault.Upstream, its text marked as its). A protocol error from an
// upstream is integrity; an upstream that ends or is cut (a message past
// limits.UpstreamMaxMessageBytes) fails its calls in flight with
// unavailable (limit for the message) and is started again on the next
// call, after a delay that doubles with each failure in a row, at most
// limits.UpstreamMaxRestarts times in a row.
//
// One upstream process (or HTTP session) serves the calls of one actor
// (Share: the default), one session, or every caller.
package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/run/sandbox"
)

// Options configure a Gateway. The zero value runs stdio upstreams
// uncontained only (no sandbox helper).
type Options struct {
	// Helper is the sandbox helper command (run/sandbox), needed by
	// contained upstreams.
	Helper []string
	// Protected are the paths no contained upstream may change in its
	// roots (the host's set: .git, capkit.toml, the lock file, ...).
	Protected capability.Protected
	// Quarantine, Reduced, RequireFull and Limits are the container's,
	// as for contained commands (run/sandbox.Options and Spec.Limits).
	Quarantine  string
	Reduced     bool
	RequireFull bool
	Limits      sandbox.Limits
	// Log is the host's trusted log: starts, ends, restarts and
	// definitions that changed. Nil discards.
	Log *slog.Logger
	// Audit receives an event per start, end and restart of an upstream
	// (with the call's identity when a call started it). Nil disables it.
	Audit *slog.Logger
	// LockFile names the lock in messages ("capkit upstream review").
	LockFile string
	// ReviewHint is the command a person runs to review changes, for
	// messages; "" is "capkit upstream review".
	ReviewHint string
}

// Gateway keeps the upstreams of one host and their processes. It is
// safe for concurrent use.
type Gateway struct {
	opts  Options
	log   *slog.Logger
	ups   map[string]*upstream
	tools map[string]*Tool // by public name
	order []*Tool

	mu       sync.Mutex
	watchers map[*watcher]struct{}
	closed   bool
}

// Tool is one approved upstream tool the catalog offers.
type Tool struct {
	// Upstream and Name are the upstream's name and the tool's name there;
	// Public is the name a model calls it by (NAME__TOOL).
	Upstream, Name, Public string
	// Definition is the approved definition (the lock's).
	Definition *Definition
	digest     string
	up         *upstream
	outSchema  func() (*resolvedSchema, error)
}

// upstream is an Upstream with its approved tools and live connections.
type upstream struct {
	Upstream
	g        *Gateway
	approved map[string]*Tool // by upstream tool name

	mu    sync.Mutex
	conns map[string]*conn // by share key
}

// Key names whom a call is made for; an upstream's Share picks what of it
// decides which process serves the call.
type Key struct{ Actor, Session string }

func (u *upstream) keyOf(k Key) string {
	switch u.Share {
	case ShareServer:
		return ""
	case ShareSession:
		return "session " + k.Session
	}
	return "actor " + k.Actor
}

// New returns the gateway of upstreams, offering the tools lock approves
// that each one's Tools allow. A name that would not be one every client
// accepts, or two that collide, fail naming both. Nothing is started
// until a session needs it. opts may be nil.
func New(upstreams []Upstream, lock *Lock, opts *Options) (*Gateway, error) {
	g := &Gateway{ups: map[string]*upstream{}, tools: map[string]*Tool{}, watchers: map[*watcher]struct{}{}}
	if opts != nil {
		g.opts = *opts
	}
	g.log = g.opts.Log
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.opts.ReviewHint == "" {
		g.opts.ReviewHint = "capkit upstream review"
	}
	folded := map[string]string{}
	for _, cfg := range upstreams {
		if err := cfg.check(); err != nil {
			return nil, err
		}
		if g.ups[cfg.Name] != nil {
			return nil, fault.New(fault.InvalidInput, "upstream %s is configured twice", cfg.Name)
		}
		u := &upstream{Upstream: cfg, g: g, approved: map[string]*Tool{}, conns: map[string]*conn{}}
		g.ups[cfg.Name] = u
		for _, name := range lock.Tools(cfg.Name) {
			if !u.allows(name) {
				continue
			}
			public, err := PublicName(cfg.Name, name)
			if err != nil {
				return nil, err
			}
			if other, ok := folded[foldName(public)]; ok {
				return nil, fault.New(fault.InvalidInput, "upstream tools %q and %q would be offered under names that differ only in case; a client may not tell them apart (narrow tools = [...] of one of them)", other, public)
			}
			folded[foldName(public)] = public
			def, _ := lock.Approved(cfg.Name, name)
			t := &Tool{Upstream: cfg.Name, Name: name, Public: public, Definition: def, digest: def.Digest(), up: u}
			t.outSchema = sync.OnceValues(func() (*resolvedSchema, error) { return resolveSchema(json.RawMessage(def.OutputSchema)) })
			u.approved[name] = t
			g.tools[public] = t
			g.order = append(g.order, t)
		}
	}
	return g, nil
}

// Tools lists the approved tools, upstream by upstream in configuration
// order, each upstream's in name order.
func (g *Gateway) Tools() []*Tool { return slices.Clone(g.order) }

// Upstreams lists the upstreams' names in name order.
func (g *Gateway) Upstreams() []string { return sortedKeys(g.ups) }

// Tool is the approved tool of that public name.
func (g *Gateway) Tool(public string) (*Tool, bool) {
	t, ok := g.tools[public]
	return t, ok
}

// Close stops every upstream process and refuses calls from then on.
func (g *Gateway) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, u := range g.ups {
		u.mu.Lock()
		conns := slices.Collect(maps.Values(u.conns))
		u.conns = map[string]*conn{}
		u.mu.Unlock()
		for _, c := range conns {
			wg.Go(c.close)
		}
	}
	wg.Wait()
}

// Release stops the processes that served session (Share session only).
func (g *Gateway) Release(k Key) {
	for _, u := range g.ups {
		if u.Share != ShareSession {
			continue
		}
		key := u.keyOf(k)
		u.mu.Lock()
		c := u.conns[key]
		delete(u.conns, key)
		u.mu.Unlock()
		if c != nil {
			go c.close()
		}
	}
}

// conn is the connection of key, made (not started) when missing; nil
// once the gateway is closed.
func (u *upstream) conn(key string) *conn {
	u.g.mu.Lock()
	closed := u.g.closed
	u.g.mu.Unlock()
	if closed {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	c := u.conns[key]
	if c == nil {
		c = newConn(u, key)
		u.conns[key] = c
	}
	return c
}

// watcher is a function told when what is offered to k may have changed.
type watcher struct {
	k Key
	f func()
}

// Watch calls f whenever an upstream serving k lists its tools and what
// is offered changed, until the returned cancel is called.
func (g *Gateway) Watch(k Key, f func()) (cancel func()) {
	w := &watcher{k: k, f: f}
	g.mu.Lock()
	g.watchers[w] = struct{}{}
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		delete(g.watchers, w)
		g.mu.Unlock()
	}
}

// changed tells the watchers served by c.
func (g *Gateway) changed(c *conn) {
	g.mu.Lock()
	var fs []func()
	for w := range g.watchers {
		if c.up.keyOf(w.k) == c.key {
			fs = append(fs, w.f)
		}
	}
	g.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Offered is why t is not offered to k now, or nil when it is: the
// upstream serving k must have listed t with its approved definition.
// An upstream not started yet is started; Offered waits for its first
// listing while ctx allows (a done ctx: not offered yet, and the
// watchers are told once it is listed).
func (g *Gateway) Offered(ctx context.Context, k Key, t *Tool) error {
	c := t.up.conn(t.up.keyOf(k))
	if c == nil {
		return errClosed(t.Upstream)
	}
	return c.offered(ctx, t)
}

// errClosed is the failure of a call after Close.
func errClosed(name string) error {
	return fault.New(fault.Unavailable, "upstream %s: capkit is stopping", name)
}

// reviewText is what a person is told to run about an upstream's change.
func (g *Gateway) reviewText() string {
	return g.opts.ReviewHint
}

// foldName is a name as a client that ignores case sees it.
func foldName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// backoff is the wait before the start after n failures in a row.
func backoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := limits.UpstreamRestartDelay << (n - 1)
	return min(d, limits.UpstreamRestartMaxDelay)
}

// untrusted is an upstream's text in a message: clipped, marked as its.
func untrusted(s string) string { return "«" + clip.N(s, 400) + "»" }

// listedDefinitions lists every tool of cs, bounded.
func listedDefinitions(ctx context.Context, cs *mcp.ClientSession) (map[string]*mcp.Tool, error) {
	out := map[string]*mcp.Tool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if len(out) == limits.UpstreamMaxTools {
			return nil, fault.New(fault.Limit, "it lists more than %s tools", limits.Count(limits.UpstreamMaxTools))
		}
		if _, dup := out[t.Name]; dup {
			return nil, fault.New(fault.Integrity, "it lists tool %s twice", untrusted(t.Name))
		}
		out[t.Name] = t
	}
	return out, nil
}

// describe is "upstream memory" or "upstream memory (actor assistant)".
func (c *conn) describe() string {
	if c.key == "" {
		return "upstream " + c.up.Name
	}
	return fmt.Sprintf("upstream %s (%s)", c.up.Name, c.key)
}
