package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capkit/capkit/internal/clip"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel/catalog"
)

// Session is one actor's use of a Runtime: its capabilities, per-tool call
// counters, the tools discovery activated, and per-session state that
// plugins keep with Local. It is safe for concurrent use.
type Session struct {
	id    string
	rt    *Runtime
	actor string
	caps  capability.Set
	// narrowed, when set, is caps with fewer roots (NarrowRoots): what
	// handlers see. Effects are caps' either way.
	narrowed atomic.Pointer[capability.Set]
	trusted  bool
	calls    []atomic.Int64

	mu        sync.Mutex
	activated map[string]bool
	listeners []func()
	closers   []func()
	closed    bool

	locals sync.Map
}

// Actor is the session's actor.
func (s *Session) Actor() string { return s.actor }

// ID names the session in the audit log: random, so the sessions of every
// process writing one log are told apart.
func (s *Session) ID() string { return s.id }

// Capabilities are the capabilities the session holds, narrowed by
// NarrowRoots if it was called. Callers must not modify them.
func (s *Session) Capabilities() capability.Set {
	if n := s.narrowed.Load(); n != nil {
		return *n
	}
	return s.caps
}

// NarrowRoots restricts the roots of the session's capabilities to where
// they meet within (absolute, cleaned directories; see
// capability.Set.Narrow), from then on, for every call that starts later.
// It always narrows the capabilities the session was started with, so
// calling it again can give back what an earlier call took, never more;
// effects, resources, budgets and activated tools are unchanged.
func (s *Session) NarrowRoots(within []string) {
	n := s.caps.Narrow(within)
	s.narrowed.Store(&n)
}

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
// discovery activated, among the tools its capabilities grant and that
// are offered to it now (Meta.Offered). Without tool_search there is no
// discovery, so every granted tool is offered.
func (s *Session) Specs() []*catalog.Entry { return s.SpecsWithin(doneCtx) }

// SpecsWithin is Specs, waiting while ctx allows for the answers
// Meta.Offered does not know yet (another server's tools while it
// starts), for a client's first listing; a tool still unknown when ctx
// ends is left out, and OnToolsChanged's listeners run once it is offered.
func (s *Session) SpecsWithin(ctx context.Context) []*catalog.Entry {
	if !s.rt.toolSearch || !s.caps.Grants(capability.ToolSearch) {
		return s.GrantedWithin(ctx)
	}
	s.mu.Lock()
	specs := s.rt.catalog.DeferredSpecsFor(s.caps, func(name string) bool { return s.activated[name] })
	s.mu.Unlock()
	return s.offeredNow(ctx, specs)
}

// GrantedWithin is every tool the session's capabilities grant that is
// offered to it now, whether or not discovery activated it (a host that
// lists everything at once), waiting for Meta.Offered as SpecsWithin does.
func (s *Session) GrantedWithin(ctx context.Context) []*catalog.Entry {
	return s.offeredNow(ctx, s.rt.catalog.SpecsFor(s.caps))
}

// offeredNow is specs without the tools Meta.Offered withholds from the
// session.
func (s *Session) offeredNow(ctx context.Context, specs []*catalog.Entry) []*catalog.Entry {
	if s.rt.offered == nil {
		return specs
	}
	return slices.DeleteFunc(specs, func(e *catalog.Entry) bool { return !s.rt.offeredTo(ctx, s, e) })
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

// OnToolsChanged registers f to run after Activate adds tools, and when
// ToolsChanged says that what Specs returns may have changed.
func (s *Session) OnToolsChanged(f func()) {
	s.mu.Lock()
	s.listeners = append(s.listeners, f)
	s.mu.Unlock()
}

// ToolsChanged runs the OnToolsChanged listeners: a tool's Meta.Offered
// answer for this session changed (another server withdrew or restored a
// tool), so a front door lists Specs again and tells its client.
func (s *Session) ToolsChanged() {
	s.mu.Lock()
	listeners := slices.Clone(s.listeners)
	s.mu.Unlock()
	for _, f := range listeners {
		f()
	}
}

// OnClose registers f to run once when the session is closed; after
// Close, f runs at once. Tools keep what lives as long as a session (a
// server process started for it) and release it here.
func (s *Session) OnClose(f func()) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		f()
		return
	}
	s.closers = append(s.closers, f)
	s.mu.Unlock()
}

// Close ends the session: the OnClose functions run, last registered
// first. The front door that made the session closes it when its client
// goes (the stdio connection ends, the HTTP session is deleted or
// evicted). Calls may still be made after it, which tools may refuse.
func (s *Session) Close() {
	s.mu.Lock()
	closers := s.closers
	s.closers, s.closed = nil, true
	s.mu.Unlock()
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
}

var emptyArgs = json.RawMessage("{}")

// Call runs the named tool with args (a JSON object; empty means {}). It
// returns the result or a *fault.Error.
func (s *Session) Call(ctx context.Context, name string, args json.RawMessage) (*Result, error) {
	now := time.Now()
	a, err := s.admit(name, args)
	var res *Result
	if err == nil {
		res, err = s.run(ctx, now, a)
		defer a.call.after.run()
	}
	return s.finish(ctx, now, a, len(args), res, err)
}

// Start makes the call Call makes without waiting for it: done receives
// what Call would return, exactly once. A call refused before its handler
// runs (unknown tool, denied, limit, invalid arguments) ends before Start
// returns, with done run on the calling goroutine; otherwise done runs on
// the goroutine that ends the call: the handler's worker when it returns,
// or a timer's when the deadline passes or ctx ends first, in which case
// the handler is abandoned as in Call. done should return promptly.
//
// Start is for transports that must keep reading while calls run (to see
// cancellations): the call is handed to a worker once, where Call hands it
// over and back.
func (s *Session) Start(ctx context.Context, name string, args json.RawMessage, done func(*Result, error)) {
	now := time.Now()
	a, err := s.admit(name, args)
	if err != nil {
		done(s.finish(ctx, now, a, len(args), nil, err))
		return
	}
	p := &pending{s: s, parent: ctx, a: a, start: now, in: len(args), done: done}
	wait := a.ctx.init(ctx, &a.call, now, a.t.policy.Timeout)
	p.mu.Lock()
	p.timer = time.AfterFunc(wait, p.expired)
	if ctx.Done() != nil {
		p.stop = context.AfterFunc(ctx, p.parentEnded)
	}
	p.mu.Unlock()
	s.rt.workers.Start(&job{a: a, p: p})
}

// finish logs and audits a call that ended, and replaces the cause of a
// failure an untrusted session must not see (its Detail, the caller's
// content, stays; neither the log nor the audit event holds it).
func (s *Session) finish(ctx context.Context, start time.Time, a *admitted, in int, res *Result, err error) (*Result, error) {
	var entry *catalog.Entry
	if a != nil {
		entry = a.call.Tool
	}
	if err == nil && s.rt.checkOutput {
		err = matchesOutputSchema(entry, res)
	}
	var code fault.Code
	var policy string
	var out int64
	if err != nil {
		fe := fault.As(err)
		code, policy = fe.Code, fe.Policy
		s.rt.log.LogAttrs(ctx, slog.LevelWarn, "tool call failed",
			slog.String("actor", s.actor), slog.String("tool", toolName(entry)),
			slog.String("code", string(code)), slog.String("detail", fe.Error()))
		if !s.trusted && (fe.Code == fault.IO || fe.Code == fault.Internal || fe.Err != nil) {
			fe = fe.Restated("%s", fe.Public())
		}
		err = fe
		res = nil
	} else {
		out = res.Size()
		if res.Image != nil {
			out += res.Image.EncodedSize()
		}
	}
	if s.rt.audit != nil {
		s.audit(ctx, start, a, in, out, code, policy)
	}
	return res, err
}

// audit logs the call's event: who, which tool, the outcome and, for a
// denial or a limit, the policy that decided it; the bytes, the time and
// the calls of the tool the session has left; the arguments' shape
// (argShape), never their values.
func (s *Session) audit(ctx context.Context, start time.Time, a *admitted, in int, out int64, code fault.Code, policy string) {
	outcome := "ok"
	if code != "" {
		outcome = string(code)
	}
	var entry *catalog.Entry
	if a != nil {
		entry = a.call.Tool
	}
	h := s.rt.audit.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	// The record is made here rather than by Logger.LogAttrs, which
	// records the caller's program counter (a stack walk) that no audit
	// event holds.
	var buf [12]slog.Attr
	attrs := append(appendIdentity(buf[:0], s, ctx), slog.String("tool", toolName(entry)),
		slog.String("outcome", outcome), slog.Int("in_bytes", in),
		slog.Int64("out_bytes", out), slog.Int64("duration_us", time.Since(start).Microseconds()))
	if policy != "" {
		attrs = append(attrs, slog.String("policy", policy))
	}
	if a != nil {
		left := max(int64(a.t.policy.MaxCalls)-s.calls[a.i].Load(), 0)
		attrs = append(attrs, slog.Int64("calls_left", left))
		if a.call.Args != nil {
			attrs = append(attrs, argShape(entry, a.call.Args))
		}
	}
	r := slog.NewRecord(time.Now(), slog.LevelInfo, "call", 0)
	r.AddAttrs(attrs...)
	h.Handle(ctx, r)
}

// matchesOutputSchema fails with internal when res's structured content
// does not match its tool's output schema (Options.CheckOutput).
func matchesOutputSchema(e *catalog.Entry, res *Result) error {
	if e == nil || len(res.Structured) == 0 {
		return nil
	}
	if err := e.ValidateOutput(res.Structured); err != nil {
		return fault.Wrap(fault.Internal, err, "tool %s returned a result that does not match its output schema", e.Name)
	}
	return nil
}

// toolName is the audited name: registered names only, never caller text.
func toolName(e *catalog.Entry) string {
	if e == nil {
		return "(unknown)"
	}
	return e.Name
}

// admitted is a call past the checks before its handler: what the handler
// sees and the context it runs under, in one allocation.
type admitted struct {
	call Call
	ctx  callCtx
	t    *tool
	i    int // the tool's index: its session call counter
}

// admit makes the checks before the handler, in order. A call that fails
// them returns a nil *admitted unless its tool is known.
func (s *Session) admit(name string, args json.RawMessage) (*admitted, error) {
	entry, i, ok := s.rt.catalog.Lookup(name)
	if !ok {
		return nil, fault.New(fault.NotFound, "unknown tool %q", clip.Text(name))
	}
	a := &admitted{call: Call{Session: s, Tool: entry}, t: &s.rt.tools[i], i: i}
	if !s.caps.Grants(entry.Effect) {
		return a, fault.New(fault.Denied, "tool %s is not granted to this session", entry.Name).By("grant:" + string(entry.Effect))
	}
	p := &a.t.policy
	if int64(len(args)) > p.MaxInputBytes {
		return a, fault.LimitExceeded("tool "+entry.Name+" input bytes", p.MaxInputBytes, int64(len(args))).By(setting("max_input_bytes", p.MaxInputBytes))
	}
	if n := s.calls[i].Add(1); n > int64(p.MaxCalls) {
		return a, fault.New(fault.Limit, "tool %s: call budget of %d per session is spent", entry.Name, p.MaxCalls).By(setting("max_calls", int64(p.MaxCalls)))
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = emptyArgs
	}
	if err := validate(entry, args); err != nil {
		return a, err
	}
	if n := a.t.running.Add(1); n > int32(p.MaxConcurrent) {
		a.t.running.Add(-1)
		s.calls[i].Add(-1) // not run: the budget is not spent
		return a, fault.New(fault.Limit, "tool %s: %s running, the most it runs at once over every session (a call past its deadline keeps its place until it stops); retry when one ends, %s",
			entry.Name, callsAre(p.MaxConcurrent), RaiseHint(entry.Name, "max_concurrent")).By(setting("max_concurrent", int64(p.MaxConcurrent)))
	}
	a.call.Args, a.call.MaxOutputBytes = args, p.MaxOutputBytes
	return a, nil
}

// setting is the policy a kernel refusal names: "max_calls=500".
func setting(name string, v int64) string { return name + "=" + strconv.FormatInt(v, 10) }

// callsAre is "1 call is" or "N calls are".
func callsAre(n int) string {
	if n == 1 {
		return "1 call is"
	}
	return fmt.Sprintf("%d calls are", n)
}

// validate checks args against the entry's schema. Duplicate member names
// are rejected, so no decoder downstream can pick a different value than
// the one validated.
// A schema that does not resolve is the tool's defect (internal), not the
// caller's.
func validate(entry *catalog.Entry, args json.RawMessage) error {
	err := entry.ValidateArgs(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, catalog.ErrSchema):
		return fault.Wrap(fault.Internal, err, "tool %s cannot be called", entry.Name)
	}
	return fault.New(fault.InvalidInput, "tool %s: invalid arguments: %s", entry.Name, err.Error())
}

// run calls the handler under the policy's deadline, on a worker
// goroutine: a handler stuck past its deadline is abandoned, and the caller
// returns. Without a context that can end, the caller waits on one channel
// rather than a select (BenchmarkKernelCall).
func (s *Session) run(ctx context.Context, now time.Time, a *admitted) (*Result, error) {
	wait := a.ctx.init(ctx, &a.call, now, a.t.policy.Timeout)
	j := jobs.Get().(*job)
	j.a = a
	j.timer.Reset(wait)
	s.rt.workers.Start(j)
	if pd := ctx.Done(); pd == nil {
		<-j.done
	} else {
		select {
		case <-j.done:
		case <-pd:
			if j.state.CompareAndSwap(jobRunning, jobAbandoned) {
				// The worker still owns j: it is not reused.
				j.timer.Stop()
				perr := ctx.Err()
				a.ctx.cancel(ctxParent, perr)
				return nil, a.parentEnded(perr)
			}
			<-j.done // the handler or the deadline came first
		}
	}
	if j.state.Load() == jobExpired {
		// The worker still owns j: it is not reused.
		a.ctx.cancel(ctxExpired, nil)
		return nil, a.timeLimit(nil)
	}
	res, err := j.res, j.err
	if j.timer.Stop() {
		j.a, j.res, j.err = nil, nil, nil
		j.state.Store(jobRunning)
		jobs.Put(j)
	}
	res, err = a.outcome(res, err)
	a.ctx.cancel(ctxCanceled, nil)
	return res, err
}

// outcome checks what the handler returned: a failure past the deadline is
// the time limit's; no result is an internal failure; a result over the
// output bound is refused, never truncated.
func (a *admitted) outcome(res *Result, err error) (*Result, error) {
	name := a.call.Tool.Name
	if err != nil {
		if res != nil {
			res.Release()
		}
		if a.ctx.Err() == context.DeadlineExceeded || !time.Now().Before(a.ctx.deadline) {
			return nil, a.timeLimit(err)
		}
		return nil, err
	}
	if res == nil {
		return nil, fault.New(fault.Internal, "tool %s returned no result", name)
	}
	if size, max := res.Size(), a.call.MaxOutputBytes; size > max {
		res.Release()
		return nil, fault.OutputTooLarge("the result of "+name, size, max, "ask for less (a smaller window, fewer entries), "+RaiseHint(name, "max_output_bytes")).By(setting("max_output_bytes", max))
	}
	if err := checkImage(name, res); err != nil {
		res.Release()
		return nil, err
	}
	return res, nil
}

func (a *admitted) timeLimit(err error) error {
	own := a.t.policy.Timeout
	if b := a.ctx.bound; b < own {
		return fault.Wrap(fault.Limit, err, "tool %s: the caller's deadline passed after %v (the tool's own time limit is %v)", a.call.Tool.Name, max(b, 0).Round(time.Millisecond), own).By("caller_deadline")
	}
	return fault.Wrap(fault.Limit, err, "tool %s: time limit of %v exceeded", a.call.Tool.Name, own).By("timeout=" + own.String())
}

// parentEnded is the failure of a call whose caller's context ended first.
func (a *admitted) parentEnded(perr error) error {
	if perr == context.DeadlineExceeded {
		return a.timeLimit(nil)
	}
	return fault.Wrap(fault.Unavailable, perr, "tool %s: call canceled", a.call.Tool.Name)
}

// pending is a call Start made: whichever of its handler, its deadline and
// its caller's context ends it first delivers the outcome.
type pending struct {
	s      *Session
	parent context.Context
	a      *admitted
	start  time.Time
	in     int
	done   func(*Result, error)

	ended atomic.Bool
	mu    sync.Mutex // guards timer and stop while Start sets them
	timer *time.Timer
	stop  func() bool
}

// end claims the outcome for its caller, reporting whether it was first,
// and cancels the handler's context for the given reason.
func (p *pending) end(why uint32, perr error) bool {
	if !p.ended.CompareAndSwap(false, true) {
		return false
	}
	p.mu.Lock()
	timer, stop := p.timer, p.stop
	p.mu.Unlock()
	timer.Stop()
	if stop != nil {
		stop()
	}
	if why != ctxCanceled {
		p.a.ctx.cancel(why, perr)
	}
	return true
}

// handled is the handler's return.
func (p *pending) handled(res *Result, err error) {
	if !p.end(ctxCanceled, nil) {
		if res != nil {
			res.Release() // nobody will use it
		}
		return
	}
	res, err = p.a.outcome(res, err)
	p.a.ctx.cancel(ctxCanceled, nil)
	p.reply(p.s.finish(p.parent, p.start, p.a, p.in, res, err))
}

func (p *pending) expired() {
	if p.end(ctxExpired, nil) {
		p.reply(p.s.finish(p.parent, p.start, p.a, p.in, nil, p.a.timeLimit(nil)))
	}
}

func (p *pending) parentEnded() {
	perr := p.parent.Err()
	if p.end(ctxParent, perr) {
		p.reply(p.s.finish(p.parent, p.start, p.a, p.in, nil, p.a.parentEnded(perr)))
	}
}

// reply hands the outcome to done, then starts the call's AfterReply
// work.
func (p *pending) reply(res *Result, err error) {
	p.done(res, err)
	p.a.call.after.run()
}
