package budget

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
)

// TestDeferredByRequestsInFlight: a request refused for bytes that
// reservations in flight hold is told so, and to retry when they are due
// to be settled (their requests' deadlines), not at the window's end;
// reservations with no deadline, or past it, leave the window's end.
func TestDeferredByRequestsInFlight(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		c := newFakeClock()
		b := open(t, loc, policy(100, 1000), c)
		bg := context.Background()
		fetch, cancel := context.WithTimeout(bg, 30*time.Second)
		defer cancel()
		first, err := b.ReserveUpTo(fetch, "a", 1000)
		if err != nil || first.Bytes != 1000 {
			t.Fatalf("%+v %v", first, err)
		}
		e := wantCode(t, must(b.ReserveUpTo(bg, "b", 1000)), fault.Deferred, "0 of its 1000 bytes left", "1000 bytes are reserved by requests in flight (1)")
		if e.RetryAfter > 30*time.Second || e.RetryAfter < 29*time.Second {
			t.Fatalf("retry after %v, want the in-flight request's deadline (30s), not the window's end", e.RetryAfter)
		}
		// Settled, the bytes it did not use come back at once.
		if err := b.Settle(bg, first.ID, 100, Outcome{Status: 200}); err != nil {
			t.Fatal(err)
		}
		second, err := b.ReserveUpTo(fetch, "b", 1000)
		if err != nil || second.Bytes != 900 {
			t.Fatalf("after the settlement: %+v %v", second, err)
		}
		// Those that hold the bytes asked for are waited for, nearest
		// deadline first; one without a deadline is not counted on.
		later, cancel2 := context.WithTimeout(bg, 10*time.Minute)
		defer cancel2()
		if err := b.Settle(bg, second.ID, 0, Outcome{}); err != nil {
			t.Fatal(err)
		}
		for _, r := range []struct {
			ctx   context.Context
			bytes int64
		}{{bg, 300}, {later, 300}, {fetch, 300}} {
			if _, err := b.Reserve(r.ctx, "c", r.bytes); err != nil {
				t.Fatal(err)
			}
		}
		e = wantCode(t, must(b.Reserve(bg, "d", 100)), fault.Deferred, "300 bytes are reserved by requests in flight (1)")
		if e.RetryAfter > 30*time.Second {
			t.Fatalf("100 bytes: retry after %v, want the nearest deadline", e.RetryAfter)
		}
		e = wantCode(t, must(b.Reserve(bg, "d", 400)), fault.Deferred, "600 bytes are reserved by requests in flight (2)")
		if e.RetryAfter > 10*time.Minute || e.RetryAfter < 9*time.Minute {
			t.Fatalf("400 bytes: retry after %v, want the second deadline", e.RetryAfter)
		}
		e = wantCode(t, must(b.Reserve(bg, "d", 800)), fault.Deferred, "0 of its 1000 bytes left")
		if e.RetryAfter != time.Hour || strings.Contains(e.Message, "in flight") {
			t.Fatalf("800 bytes: %v after %v, want the window's end", e, e.RetryAfter)
		}
		// Past its deadline a reservation is no longer in flight (its
		// outcome is unknown: it stays charged).
		c.advance(11*time.Minute, 11*time.Minute)
		e = wantCode(t, must(b.Reserve(bg, "d", 400)), fault.Deferred, "0 of its 1000 bytes left")
		if e.RetryAfter != 49*time.Minute || strings.Contains(e.Message, "in flight") {
			t.Fatalf("overdue: %v after %v, want the window's end", e, e.RetryAfter)
		}
	})
}

// TestTaskDeferredByRequestsInFlight: the task's share comes back the
// same way.
func TestTaskDeferredByRequestsInFlight(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		p := policy(100, 1000)
		p.TaskBytes = 400
		b := open(t, loc, p, newFakeClock())
		fetch, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := b.ReserveUpTo(fetch, "a", 400); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Reserve(fetch, "b", 400); err != nil {
			t.Fatal(err)
		}
		e := wantCode(t, must(b.ReserveUpTo(context.Background(), "a", 400)), fault.Deferred, `task "a" has 0 of its 400 bytes left`, "400 bytes are reserved by requests in flight (1)")
		if e.RetryAfter > 20*time.Second || e.RetryAfter < 19*time.Second {
			t.Fatalf("retry after %v, want the task's request's deadline", e.RetryAfter)
		}
	})
}
