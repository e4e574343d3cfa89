package kernel

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/workpool"
)

// workerIdle is how long an idle handler goroutine waits for more work
// before it exits.
const workerIdle = 30 * time.Second

// job is one handler run for Call. Its outcome is claimed once: by the
// handler's return (jobHandled), the deadline's timer (jobExpired) or the
// caller leaving when its context ended (jobAbandoned). Only the handler
// and the timer signal done, and only when they claimed the outcome, so
// done's room for one signal is enough and a worker never blocks on a
// caller that gave up. A job of Start (p set) delivers its outcome through
// p instead.
type job struct {
	a     *admitted
	p     *pending
	res   *Result
	err   error
	state atomic.Uint32
	done  chan struct{}
	timer *time.Timer // runs expire at the deadline; reused with the job
}

// The states of a job.
const (
	jobRunning uint32 = iota
	jobHandled
	jobExpired
	jobAbandoned
)

// jobs are reused only when neither their worker nor their timer can touch
// them any more.
var jobs = sync.Pool{New: func() any {
	j := &job{done: make(chan struct{}, 1)}
	j.timer = time.AfterFunc(time.Hour, j.expire)
	j.timer.Stop()
	return j
}}

func (j *job) expire() {
	if j.state.CompareAndSwap(jobRunning, jobExpired) {
		j.done <- struct{}{}
	}
}

// newWorkers is the pool handlers run on, goroutines that outlive one
// call (internal/workpool). Handlers run off the caller's goroutine so a
// handler stuck in a call that ignores its context cannot hang the
// caller; reusing the goroutines keeps their grown stacks, which a fresh
// goroutine per call would copy again every time.
func newWorkers() *workpool.Pool[*job] { return workpool.New(workerIdle, (*job).run) }

func (j *job) run() {
	res, err := j.handle()
	if j.p != nil {
		j.p.handled(res, err)
		return
	}
	j.res, j.err = res, err
	if j.state.CompareAndSwap(jobRunning, jobHandled) {
		j.done <- struct{}{}
	} else if res != nil {
		res.Release() // the caller left: nobody will use it
	}
}

// handle runs the handler; a panic is an internal failure. The call's
// place among its tool's running calls is given back when the handler
// ends, however it ends (runtime.Goexit too), and before the outcome is
// delivered, after which the caller may reuse j.
func (j *job) handle() (res *Result, err error) {
	defer j.a.t.running.Add(-1)
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fault.Wrap(fault.Internal, fmt.Errorf("panic: %v\n%s", p, debug.Stack()), "tool %s failed", j.a.call.Tool.Name)
		}
	}()
	return j.a.t.handler(&j.a.ctx, &j.a.call)
}
