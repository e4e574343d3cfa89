package kernel

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/capkit/capkit/fault"
)

// workerIdle is how long an idle handler goroutine waits for more work
// before it exits.
const workerIdle = 30 * time.Second

// job is one handler run. done has room for the one outcome, so a worker
// never blocks on a caller that gave up at its deadline.
type job struct {
	ctx  context.Context
	t    *tool
	call *Call
	res  *Result
	err  error
	done chan struct{}
}

var jobs = sync.Pool{New: func() any { return &job{done: make(chan struct{}, 1)} }}

// workers runs handlers on goroutines that outlive one call. Handlers run
// off the caller's goroutine so a handler stuck in a call that ignores its
// context cannot hang the caller; reusing the goroutines keeps their grown
// stacks, which a fresh goroutine per call would copy again every time.
type workers struct {
	idle chan *job // unbuffered: a send succeeds only when a worker waits
}

func newWorkers() *workers { return &workers{idle: make(chan *job)} }

func (w *workers) start(j *job) {
	select {
	case w.idle <- j:
	default:
		go w.loop(j)
	}
}

func (w *workers) loop(j *job) {
	timer := time.NewTimer(workerIdle)
	defer timer.Stop()
	for {
		j.run()
		timer.Reset(workerIdle)
		select {
		case j = <-w.idle:
		case <-timer.C:
			return
		}
	}
}

func (j *job) run() {
	defer func() {
		if p := recover(); p != nil {
			j.res, j.err = nil, fault.Wrap(fault.Internal, fmt.Errorf("panic: %v\n%s", p, debug.Stack()), "tool %s failed", j.call.Tool.Name)
		}
		j.done <- struct{}{}
	}()
	j.res, j.err = j.t.handler(j.ctx, j.call)
}
