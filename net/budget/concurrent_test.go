package budget

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit/pgtest"
)

// Admissions under one lease from many goroutines (in two statements at
// once while enough wait), while another host's admissions take that
// lease back and take leases of their own: exactly the allowance is
// admitted, and the settled bytes go back.
func TestConcurrentStatementsUnderOneLease(t *testing.T) {
	const allowance, goroutines = 300, 8
	loc := pgtest.URL(t)
	ctx := context.Background()
	a := open(t, loc, policy(allowance, 1<<40), nil)
	b := open(t, loc, policy(allowance, 1<<40), nil)
	var admitted, leased atomic.Int64
	var wg sync.WaitGroup
	for g := range 2 * goroutines {
		h := a
		if g%goroutines == 0 {
			h = b // one client of b among eight of a
		}
		wg.Go(func() {
			for {
				r, err := h.Reserve(ctx, fmt.Sprintf("t%d", g), 10)
				if err != nil {
					if fault.CodeOf(err) != fault.Deferred {
						t.Error(err)
					}
					return
				}
				admitted.Add(1)
				if underLease(h, r.ID) {
					leased.Add(1)
				}
				if err := h.Settle(ctx, r.ID, 4, Outcome{Status: 200}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, h := range []*Budget{a, b} {
		if err := h.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st, err := b.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if admitted.Load() != allowance || st.WindowRequests != allowance || st.LeasedRequests != 0 || st.WindowBytes != 4*allowance || len(st.Open) != 0 {
		t.Fatalf("admitted %d (%d under leases); status %d requests (+%d leased), %d bytes, %d open; want exactly %d requests of 4 bytes",
			admitted.Load(), leased.Load(), st.WindowRequests, st.LeasedRequests, st.WindowBytes, len(st.Open), allowance)
	}
	if leased.Load() < allowance/2 {
		t.Fatalf("%d of %d admissions under leases", leased.Load(), allowance)
	}
	t.Logf("%d of %d under leases", leased.Load(), allowance)
}

// The PostgreSQL reservation table leaves room in its pages for
// settlements to update rows in place: set when the table is made, and
// set on a table made before (without it) when it is opened.
func TestReservationPagesLeaveRoom(t *testing.T) {
	loc := pgtest.URL(t)
	ctx := context.Background()
	fill := func(b *Budget) (opts string) {
		t.Helper()
		err := b.s.db.QueryRowContext(ctx, `SELECT COALESCE(array_to_string(reloptions, ','), '') FROM pg_class WHERE oid = 'budget_reservation'::regclass`).Scan(&opts)
		if err != nil {
			t.Fatal(err)
		}
		return opts
	}
	want := fmt.Sprintf("fillfactor=%d", reservationFill)
	b := open(t, loc, policy(10, 1000), nil)
	if got := fill(b); got != want {
		t.Fatalf("new table: %q, want %q", got, want)
	}
	if _, err := b.s.db.ExecContext(ctx, `ALTER TABLE budget_reservation RESET (fillfactor)`); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b = open(t, loc, policy(10, 1000), nil)
	if got := fill(b); got != want {
		t.Fatalf("table made before: %q, want %q", got, want)
	}
}
