package kernel

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// callCtx is the context a handler runs under: what
// context.WithDeadline(parent, deadline) gives, canceled when the call
// ends, without that context's own timer and registration with its
// parent. The call's watcher (the caller waiting in Session.Call, or
// Start's timer and parent watch) waits for the deadline and the parent
// anyway and cancels the context when either comes first, so a call
// makes neither that timer nor that registration (BenchmarkKernelCall).
//
// What it guarantees, as context.WithDeadline does: Deadline is the earlier
// of the parent's and the policy's; Done is closed and Err is non-nil once
// the call ended, the deadline passed (context.DeadlineExceeded) or the
// parent ended (the parent's error); values are the parent's; contexts
// derived from it are canceled with it (through AfterFunc, without a
// goroutine each). What it does not: Err becomes non-nil when the watcher
// sees the deadline or the parent end, which is when the kernel gives up on
// the call, not at the exact instant.
type callCtx struct {
	parent   context.Context
	call     *Call // what Value(callKey{}) answers (the audit's identity)
	deadline time.Time
	// bound is the call's time: the tool's limit, or less when the
	// caller's deadline comes first.
	bound time.Duration

	state atomic.Uint32 // ctxLive until canceled, then why
	mu    sync.Mutex
	perr  error         // the parent's error, for ctxParent; set before state
	done  chan struct{} // made by the first Done
	after map[*afterCall]struct{}
}

// The states of a callCtx.
const (
	ctxLive uint32 = iota
	ctxCanceled
	ctxExpired
	ctxParent
)

// closedChan is Done for a context canceled before anyone asked.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// init sets c up for call, which starts at now and may run for timeout.
// It returns how long the watcher waits before the deadline passes.
func (c *callCtx) init(parent context.Context, call *Call, now time.Time, timeout time.Duration) time.Duration {
	c.parent, c.call, c.deadline = parent, call, now.Add(timeout)
	if d, ok := parent.Deadline(); ok && d.Before(c.deadline) {
		c.deadline = d
		timeout = d.Sub(now)
	}
	c.bound = timeout
	return timeout
}

func (c *callCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *callCtx) Value(key any) any {
	if _, ok := key.(callKey); ok && c.call != nil {
		return c.call
	}
	return c.parent.Value(key)
}

func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.state.Load() != ctxLive {
			return closedChan
		}
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *callCtx) Err() error {
	switch c.state.Load() {
	case ctxLive:
		return nil
	case ctxCanceled:
		return context.Canceled
	case ctxExpired:
		return context.DeadlineExceeded
	}
	return c.perr
}

// cancel ends c for the given reason (the parent's error for ctxParent).
// Only the first cancel counts.
func (c *callCtx) cancel(why uint32, perr error) {
	c.mu.Lock()
	if c.state.Load() != ctxLive {
		c.mu.Unlock()
		return
	}
	c.perr = perr
	c.state.Store(why)
	if c.done != nil {
		close(c.done)
	}
	after := c.after
	c.after = nil
	for a := range after {
		a.ran = true
	}
	c.mu.Unlock()
	for a := range after {
		go a.f()
	}
}

// afterCall is one function registered with AfterFunc.
type afterCall struct {
	f   func()
	ran bool // guarded by the context's mu
}

// AfterFunc arranges for f to run in its own goroutine once c is canceled,
// as context.AfterFunc does; context.WithCancel and friends use it to
// propagate cancellation from c without starting a goroutine.
func (c *callCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.state.Load() != ctxLive {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	a := &afterCall{f: f}
	if c.after == nil {
		c.after = map[*afterCall]struct{}{}
	}
	c.after[a] = struct{}{}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if a.ran {
			return false
		}
		_, registered := c.after[a]
		delete(c.after, a)
		return registered
	}
}

var _ context.Context = (*callCtx)(nil)
