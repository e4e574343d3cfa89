package kernel

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKey struct{}

func TestCallCtx(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name     string
		parent   func() (context.Context, context.CancelFunc)
		why      uint32
		perr     error
		wantErr  error
		deadline time.Time
		wait     time.Duration
	}{
		{"canceled at the end", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
		}, ctxCanceled, nil, context.Canceled, now.Add(time.Minute), time.Minute},
		{"expired", func() (context.Context, context.CancelFunc) {
			return context.WithValue(context.Background(), ctxKey{}, "v"), func() {}
		}, ctxExpired, nil, context.DeadlineExceeded, now.Add(time.Minute), time.Minute},
		{"parent ended", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
		}, ctxParent, context.Canceled, context.Canceled, now.Add(time.Minute), time.Minute},
		{"parent's earlier deadline", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.WithValue(context.Background(), ctxKey{}, "v"), now.Add(time.Second))
		}, ctxExpired, nil, context.DeadlineExceeded, now.Add(time.Second), time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent, stop := tc.parent()
			defer stop()
			var c callCtx
			if wait := c.init(parent, nil, now, time.Minute); wait != tc.wait {
				t.Fatalf("wait = %v, want %v", wait, tc.wait)
			}
			if d, ok := c.Deadline(); !ok || !d.Equal(tc.deadline) {
				t.Fatalf("deadline = %v %v, want %v", d, ok, tc.deadline)
			}
			if v := c.Value(ctxKey{}); v != "v" {
				t.Fatalf("value = %v", v)
			}
			if c.Err() != nil {
				t.Fatalf("live context has error %v", c.Err())
			}
			done := c.Done()
			select {
			case <-done:
				t.Fatal("done before cancel")
			default:
			}
			derived, cancelDerived := context.WithCancel(&c)
			defer cancelDerived()
			ran := make(chan struct{}, 2)
			context.AfterFunc(&c, func() { ran <- struct{}{} })
			stopped := context.AfterFunc(&c, func() { ran <- struct{}{} })
			if !stopped() || stopped() {
				t.Fatal("stop of a pending AfterFunc: want true once, then false")
			}

			c.cancel(tc.why, tc.perr)
			c.cancel(ctxCanceled, nil) // only the first counts
			<-done
			<-c.Done()
			if !errors.Is(c.Err(), tc.wantErr) {
				t.Fatalf("err = %v, want %v", c.Err(), tc.wantErr)
			}
			if cause := context.Cause(&c); !errors.Is(cause, tc.wantErr) {
				t.Fatalf("cause = %v, want %v", cause, tc.wantErr)
			}
			select {
			case <-derived.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("derived context not canceled")
			}
			select {
			case <-ran:
			case <-time.After(5 * time.Second):
				t.Fatal("AfterFunc did not run")
			}
			select {
			case <-ran:
				t.Fatal("a stopped AfterFunc ran")
			case <-time.After(20 * time.Millisecond):
			}
			// Registered after the end: runs at once.
			context.AfterFunc(&c, func() { ran <- struct{}{} })
			select {
			case <-ran:
			case <-time.After(5 * time.Second):
				t.Fatal("AfterFunc on an ended context did not run")
			}
		})
	}
}

// A Done asked for only after the end is closed too.
func TestCallCtxDoneAfterCancel(t *testing.T) {
	var c callCtx
	c.init(context.Background(), nil, time.Now(), time.Minute)
	c.cancel(ctxExpired, nil)
	select {
	case <-c.Done():
	default:
		t.Fatal("Done of an ended context is open")
	}
	if c.Err() != context.DeadlineExceeded {
		t.Fatalf("err = %v", c.Err())
	}
}
