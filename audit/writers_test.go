package audit

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
)

// blocking is a sink whose Write waits until release is closed, counting
// the writes under way.
type blocking struct {
	started chan struct{}
	release chan struct{}
	mu      sync.Mutex
	got     []string
}

func (b *blocking) Write(e *Event) {
	b.started <- struct{}{}
	<-b.release
	b.mu.Lock()
	b.got = append(b.got, e.Tool)
	b.mu.Unlock()
}
func (b *blocking) Close(context.Context) error { return nil }

// TestHandleWaitsForItsWrite: Handle returns only once every sink has the
// event, and concurrent records are written side by side (a busy writer
// holds up nobody else's record).
func TestHandleWaitsForItsWrite(t *testing.T) {
	const n = 4
	b := &blocking{started: make(chan struct{}, n), release: make(chan struct{})}
	h := NewHandler(b)
	var returned sync.WaitGroup
	returned.Add(n)
	for i := range n {
		go func() {
			defer returned.Done()
			h.Handle(context.Background(), record("call", slog.String("tool", fmt.Sprint("t", i))))
		}()
	}
	for range n {
		<-b.started // all n writes are under way at once
	}
	b.mu.Lock()
	if len(b.got) != 0 {
		t.Fatalf("written before release: %v", b.got)
	}
	b.mu.Unlock()
	close(b.release)
	returned.Wait()
	if len(b.got) != n {
		t.Fatalf("Handle returned with %d of %d events written", len(b.got), n)
	}
}

type panicking struct{}

func (panicking) Write(*Event)                { panic("sink failed") }
func (panicking) Close(context.Context) error { return nil }

// TestHandleRaisesASinksPanic: a sink's panic reaches the logger, as if
// the sink had run on its goroutine, and the handler still writes after it.
func TestHandleRaisesASinksPanic(t *testing.T) {
	func() {
		defer func() {
			if p := recover(); p != "sink failed" {
				t.Fatalf("recovered %v, want the sink's panic", p)
			}
		}()
		NewHandler(panicking{}).Handle(context.Background(), record("call"))
		t.Fatal("Handle returned")
	}()
	c := &collect{}
	NewHandler(c).Handle(context.Background(), record("call"))
	if len(c.events) != 1 {
		t.Fatalf("%d events after a panic, want 1", len(c.events))
	}
}
