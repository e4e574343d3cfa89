package audit

import (
	"log/slog"
	"sync"
	"time"

	"github.com/capkit/capkit/internal/workpool"
)

// Writers: a record is encoded and written on a goroutine that outlives
// one record (an internal/workpool, as the kernel's handlers run), not on
// the goroutine that logged it. That goroutine is, for a call over MCP,
// the SDK's for the request, new each request: the encoding and the
// sinks' writes are the deepest part of its work, so its stack grew (a
// copy of the whole stack) on about every other call whenever a sink was
// on. A writer's stack grows once. The logger waits for its record, so
// nothing about when an event is written changes; a writer that panics
// hands the panic back to the logger.

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

// writers start a goroutine when none is idle, so concurrent loggers
// never queue behind each other.
var writers = workpool.New(writerIdle, (*write).run)

func (w *write) run() {
	defer func() {
		w.panic = recover()
		w.done <- struct{}{}
	}()
	w.h.handle(&w.r)
}
