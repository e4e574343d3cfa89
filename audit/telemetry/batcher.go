package telemetry

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// spanBatcher is the Sink's span processor: an ended span waits in a
// list of at most limits.TelemetrySpanQueue, which a goroutine hands the
// exporter limits.TelemetrySpanBatch at a time, when a batch is full or
// limits.TelemetrySpanBatchTimeout after the last export. A span past the
// list is dropped and counted. A span's end takes a lock and, once a
// batch, a non-blocking send: no goroutine wakes for each span.
type spanBatcher struct {
	exp     sdktrace.SpanExporter
	dropped *atomic.Int64

	mu     sync.Mutex
	spans  []sdktrace.ReadOnlySpan
	closed bool

	full  chan struct{} // a batch is waiting
	flush chan chan error
	stop  chan struct{}
	done  chan error // the last export's failure, once stopped
	once  sync.Once
}

func newSpanBatcher(exp sdktrace.SpanExporter, dropped *atomic.Int64) *spanBatcher {
	b := &spanBatcher{exp: exp, dropped: dropped, full: make(chan struct{}, 1), flush: make(chan chan error),
		stop: make(chan struct{}), done: make(chan error, 1)}
	go b.run()
	return b
}

// isFull reports whether a span ended now would be dropped.
func (b *spanBatcher) isFull() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed || len(b.spans) >= limits.TelemetrySpanQueue
}

// OnStart is not needed: spans are exported as they end.
func (b *spanBatcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues s for export, or drops it, counted, when the queue is
// full.
func (b *spanBatcher) OnEnd(s sdktrace.ReadOnlySpan) {
	b.mu.Lock()
	if b.closed || len(b.spans) >= limits.TelemetrySpanQueue {
		b.mu.Unlock()
		b.dropped.Add(1)
		return
	}
	b.spans = append(b.spans, s)
	n := len(b.spans)
	b.mu.Unlock()
	if n == limits.TelemetrySpanBatch {
		select {
		case b.full <- struct{}{}:
		default:
		}
	}
}

func (b *spanBatcher) run() {
	t := time.NewTicker(limits.TelemetrySpanBatchTimeout)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-b.full:
		case ack := <-b.flush:
			ack <- b.export(context.Background())
			continue
		case <-b.stop:
			b.done <- b.export(context.Background())
			return
		}
		if err := b.export(context.Background()); err != nil {
			otel.Handle(err)
		}
	}
}

// export hands the exporter every span queued, a batch at a time, and
// returns the first failure (the spans of a failed batch are gone, as
// the SDK's processor lets them go).
func (b *spanBatcher) export(ctx context.Context) error {
	var first error
	for {
		b.mu.Lock()
		n := min(len(b.spans), limits.TelemetrySpanBatch)
		batch := b.spans[:n:n]
		b.spans = b.spans[n:]
		if len(b.spans) == 0 {
			b.spans = nil // the array is let go with the last batch
		}
		b.mu.Unlock()
		if n == 0 {
			return first
		}
		ectx, cancel := context.WithTimeout(ctx, limits.TelemetryExportTimeout)
		err := b.exp.ExportSpans(ectx, batch)
		cancel()
		if err != nil && first == nil {
			first = err
		}
	}
}

// ForceFlush exports what is queued now, within ctx.
func (b *spanBatcher) ForceFlush(ctx context.Context) error {
	ack := make(chan error, 1)
	select {
	case b.flush <- ack:
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-ack:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown exports what is queued and shuts the exporter down, within
// ctx; spans ended after it are dropped.
func (b *spanBatcher) Shutdown(ctx context.Context) error {
	var err error
	b.once.Do(func() {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		close(b.stop)
		select {
		case err = <-b.done:
		case <-ctx.Done():
			err = fault.Wrap(fault.Unavailable, ctx.Err(), "telemetry: the last spans were not exported in time")
		}
		if serr := b.exp.Shutdown(ctx); err == nil {
			err = serr
		}
	})
	return err
}
