package audit

import (
	"log/slog"
	"sync"
	"time"
)

// Writers: a record is encoded and written on a goroutine that outlives
// one record, not on the goroutine that logged it. That goroutine is,
// for a call over MCP, the SDK's for the request, new each request: the
// encoding and the sinks' writes are the deepest part of its work, so
// its stack grew (a copy of the whole stack) on about every other call
// whenever a sink was on. A writer's stack grows once. The logger waits
// for its record, so nothing about when an event is written changes; a
// writer that panics hands the panic back to the logger.

// writerIdle is how long an idle writer waits for another record before
// it exits.
const writerIdle = 30 * time.Second

// write is one record handed to a writer; done has room for its one
// signal.
type write struct {
	h     *Handler
	r     slog.Record
	panic any
	done  chan struct{}
}

var writes = sync.Pool{New: func() any { return &write{done: make(chan struct{}, 1)} }}

// idleWriters is unbuffered: a send succeeds only when a writer waits;
// otherwise Handle starts one, so concurrent loggers never queue behind
// each other.
var idleWriters = make(chan *write)

// writerLoop runs writes until none came for a whole writerIdle period
// (the timer is not reset per record, as for the kernel's workers): a
// writer exits between one and two periods after its last record.
func writerLoop(w *write) {
	timer := time.NewTimer(writerIdle)
	defer timer.Stop()
	for {
		w.run()
		busy := true
		for w = nil; w == nil; {
			select {
			case w = <-idleWriters:
			case <-timer.C:
				if !busy {
					return
				}
				busy = false
				timer.Reset(writerIdle)
			}
		}
	}
}

func (w *write) run() {
	defer func() {
		w.panic = recover()
		w.done <- struct{}{}
	}()
	w.h.handle(&w.r)
}
