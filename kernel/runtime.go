package kernel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/internal/workpool"
	"github.com/capkit/capkit/kernel/catalog"
)

// Runtime is a frozen set of tools. It is safe for concurrent use.
type Runtime struct {
	catalog    *catalog.Catalog
	tools      []tool
	audit      *slog.Logger
	log        *slog.Logger
	toolSearch bool
	// checkOutput is Options.CheckOutput.
	checkOutput bool
	workers     *workpool.Pool[*job]
	// offered are the tools' Meta.Offered, by name: only those that have
	// one.
	offered map[string]func(context.Context, *Session) error
	// newIndex makes index, once (Options.ToolIndex).
	newIndex func([]*catalog.Entry) (ToolIndex, error)
	index    func() (ToolIndex, error)
}

// ToolIndex ranks catalog entries for tool_search (Options.ToolIndex).
type ToolIndex interface {
	// Rank returns at most limit entries keep accepts, best first, for
	// the words of query.
	Rank(ctx context.Context, query string, limit int, keep func(*catalog.Entry) bool) ([]*catalog.Entry, error)
}

// offeredTo reports whether e is offered to s now (Meta.Offered); ctx
// done means answer without waiting.
func (r *Runtime) offeredTo(ctx context.Context, s *Session, e *catalog.Entry) bool {
	f := r.offered[e.Name]
	return f == nil || f(ctx, s) == nil
}

// OfferedTo is why the named tool is not offered to s now (Meta.Offered),
// or nil when it is (or has no such rule); it does not wait.
func (r *Runtime) OfferedTo(s *Session, name string) error {
	if f := r.offered[name]; f != nil {
		return f(doneCtx, s)
	}
	return nil
}

// doneCtx is a context that is already done: Offered answers from what it
// knows.
var doneCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// Catalog returns the runtime's catalog.
func (r *Runtime) Catalog() *catalog.Catalog { return r.catalog }

// Policy returns the effective policy of the named tool.
func (r *Runtime) Policy(name string) (Policy, bool) {
	_, i, ok := r.catalog.Lookup(name)
	if !ok {
		return Policy{}, false
	}
	return r.tools[i].policy, true
}

// SessionOptions configure a session. The zero value is an untrusted
// session.
type SessionOptions struct {
	// Trusted sessions (the host itself, the CLI run by its user) receive
	// the full detail of io and internal failures. Model-facing sessions
	// must not be trusted.
	Trusted bool
}

// NewSession starts a session for actor holding caps. Every capability must
// be issued to actor. opts may be nil.
func (r *Runtime) NewSession(actor string, caps []capability.Capability, opts *SessionOptions) (*Session, error) {
	if actor == "" {
		return nil, fmt.Errorf("kernel: empty actor")
	}
	for _, c := range caps {
		if c.Actor != actor {
			return nil, fmt.Errorf("kernel: capability issued to %q cannot be held by %q", c.Actor, actor)
		}
	}
	s := &Session{
		id:        newSessionID(),
		rt:        r,
		actor:     actor,
		caps:      append(capability.Set(nil), caps...),
		calls:     make([]atomic.Int64, len(r.tools)),
		activated: map[string]bool{},
	}
	if opts != nil {
		s.trusted = opts.Trusted
	}
	return s, nil
}

// newSessionID is a session's id: 64 random bits in hex, so the sessions
// of every process writing one audit log are told apart.
func newSessionID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
