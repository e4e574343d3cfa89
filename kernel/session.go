package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/catalog"
	"github.com/capkit/capkit/fault"
)

// Session is one actor's use of a Runtime: its capabilities, per-tool call
// counters, the tools discovery activated, and per-session state that
// plugins keep with Local. It is safe for concurrent use.
type Session struct {
	id      uint64
	rt      *Runtime
	actor   string
	caps    capability.Set
	trusted bool
	calls   []atomic.Int64

	mu        sync.Mutex
	activated map[string]bool
	listeners []func()

	locals sync.Map
}

// Actor is the session's actor.
func (s *Session) Actor() string { return s.actor }

// Capabilities are the capabilities the session holds. Callers must not
// modify them.
func (s *Session) Capabilities() capability.Set { return s.caps }

// Trusted reports whether the session receives failure detail.
func (s *Session) Trusted() bool { return s.trusted }

// Runtime is the runtime the session belongs to.
func (s *Session) Runtime() *Runtime { return s.rt }

// Local returns the session's value for key, creating it with init on first
// use. Plugins keep per-session state here so it lives exactly as long as
// the session. Use an unexported key type to avoid collisions.
func (s *Session) Local(key any, init func() any) any {
	if v, ok := s.locals.Load(key); ok {
		return v
	}
	v, _ := s.locals.LoadOrStore(key, init())
	return v
}

// Specs is what the session's model is offered: the hot tools and those
// discovery activated, among the tools its capabilities grant. Without
// tool_search there is no discovery, so every granted tool is offered.
func (s *Session) Specs() []*catalog.Entry {
	if !s.rt.toolSearch || !s.caps.Grants(capability.ToolSearch) {
		return s.rt.catalog.SpecsFor(s.caps)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rt.catalog.DeferredSpecsFor(s.caps, func(name string) bool { return s.activated[name] })
}

// Activate adds granted tools to the session's offered set and reports
// which were newly added. Names the session is not granted are ignored:
// activation never grants. Listeners run when something was added.
func (s *Session) Activate(names ...string) []string {
	var added []string
	s.mu.Lock()
	for _, n := range names {
		e, _, ok := s.rt.catalog.Lookup(n)
		if !ok || e.Hot || s.activated[n] || !s.caps.Grants(e.Effect) {
			continue
		}
		s.activated[n] = true
		added = append(added, n)
	}
	listeners := slices.Clone(s.listeners)
	s.mu.Unlock()
	if len(added) > 0 {
		for _, f := range listeners {
			f()
		}
	}
	return added
}

// OnToolsChanged registers f to run after Activate adds tools.
func (s *Session) OnToolsChanged(f func()) {
	s.mu.Lock()
	s.listeners = append(s.listeners, f)
	s.mu.Unlock()
}

var emptyArgs = json.RawMessage("{}")

// Call runs the named tool with args (a JSON object; empty means {}). It
// returns the result or a *fault.Error.
func (s *Session) Call(ctx context.Context, name string, args json.RawMessage) (*Result, error) {
	start := time.Now()
	res, entry, err := s.call(ctx, name, args)
	var code fault.Code
	var out int64
	if err != nil {
		fe := fault.As(err)
		code = fe.Code
		s.rt.log.LogAttrs(ctx, slog.LevelWarn, "tool call failed",
			slog.String("actor", s.actor), slog.String("tool", toolName(entry)),
			slog.String("code", string(code)), slog.String("detail", fe.Error()))
		if !s.trusted && (fe.Code == fault.IO || fe.Code == fault.Internal || fe.Err != nil) {
			fe = &fault.Error{Code: fe.Code, Message: fe.Public(), RetryAfter: fe.RetryAfter}
		}
		err = fe
	} else {
		out = res.Size()
	}
	if s.rt.audit != nil {
		outcome := "ok"
		if code != "" {
			outcome = string(code)
		}
		s.rt.audit.LogAttrs(ctx, slog.LevelInfo, "call",
			slog.String("actor", s.actor), slog.String("tool", toolName(entry)),
			slog.String("outcome", outcome), slog.Int("in_bytes", len(args)),
			slog.Int64("out_bytes", out), slog.Int64("duration_us", time.Since(start).Microseconds()))
	}
	return res, err
}

// toolName is the audited name: registered names only, never caller text.
func toolName(e *catalog.Entry) string {
	if e == nil {
		return "(unknown)"
	}
	return e.Name
}

func (s *Session) call(ctx context.Context, name string, args json.RawMessage) (*Result, *catalog.Entry, error) {
	entry, i, ok := s.rt.catalog.Lookup(name)
	if !ok {
		return nil, nil, fault.New(fault.NotFound, "unknown tool %q", truncateName(name))
	}
	if !s.caps.Grants(entry.Effect) {
		return nil, entry, fault.New(fault.Denied, "tool %s is not granted to this session", entry.Name)
	}
	t := &s.rt.tools[i]
	if int64(len(args)) > t.policy.MaxInputBytes {
		return nil, entry, fault.LimitExceeded("tool "+entry.Name+" input bytes", t.policy.MaxInputBytes, int64(len(args)))
	}
	if n := s.calls[i].Add(1); n > int64(t.policy.MaxCalls) {
		return nil, entry, fault.New(fault.Limit, "tool %s: call budget of %d per session is spent", entry.Name, t.policy.MaxCalls)
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = emptyArgs
	}
	if err := validate(entry, args); err != nil {
		return nil, entry, err
	}
	res, err := s.run(ctx, t, &Call{Session: s, Tool: entry, Args: args, MaxOutputBytes: t.policy.MaxOutputBytes})
	if err != nil {
		return nil, entry, err
	}
	if res == nil {
		return nil, entry, fault.New(fault.Internal, "tool %s returned no result", entry.Name)
	}
	if size := res.Size(); size > t.policy.MaxOutputBytes {
		return nil, entry, fault.LimitExceeded("tool "+entry.Name+" output bytes", t.policy.MaxOutputBytes, size)
	}
	return res, entry, nil
}

// validate checks args against the entry's schema. Duplicate member names
// are rejected, so no decoder downstream can pick a different value than
// the one validated.
func validate(entry *catalog.Entry, args json.RawMessage) error {
	if err := entry.ValidateArgs(args); err != nil {
		return fault.New(fault.InvalidInput, "tool %s: invalid arguments: %s", entry.Name, err.Error())
	}
	return nil
}

// run calls the handler under the policy's deadline, on a worker
// goroutine: a handler stuck past its deadline is abandoned, and the caller
// returns.
func (s *Session) run(ctx context.Context, t *tool, call *Call) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, t.policy.Timeout)
	defer cancel()
	j := jobs.Get().(*job)
	j.ctx, j.t, j.call = ctx, t, call
	s.rt.workers.start(j)
	select {
	case <-j.done:
		res, err := j.res, j.err
		*j = job{done: j.done}
		jobs.Put(j)
		if err != nil && ctx.Err() == context.DeadlineExceeded {
			return nil, fault.Wrap(fault.Limit, err, "tool %s: time limit of %v exceeded", call.Tool.Name, t.policy.Timeout)
		}
		return res, err
	case <-ctx.Done():
		// The worker still owns j: it is not reused.
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fault.New(fault.Limit, "tool %s: time limit of %v exceeded", call.Tool.Name, t.policy.Timeout)
		}
		return nil, fault.Wrap(fault.Unavailable, ctx.Err(), "tool %s: call canceled", call.Tool.Name)
	}
}

// truncateName bounds caller text echoed in a message.
func truncateName(name string) string {
	const max = 64
	if len(name) > max {
		name = name[:max] + "…"
	}
	return strings.ToValidUTF8(name, "\uFFFD")
}
