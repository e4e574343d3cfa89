package budget

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/internal/testkit/pgtest"
	"github.com/capkit/capkit/limits"
)

// A holder's lease is taken back from it, live, when another host's
// admission needs its unused part; the holder's next admission under it
// inserts nothing, and the count stays exact.
func TestLeaseTakenBackFromLiveHolder(t *testing.T) {
	loc := pgtest.URL(t)
	ctx := context.Background()
	a := open(t, loc, policy(10, 1000), nil)
	b := open(t, loc, policy(10, 1000), nil)
	for i := range 2 {
		r, err := a.Reserve(ctx, "a", 100)
		if err != nil {
			t.Fatal(err)
		}
		if underLease(a, r.ID) != (i == 1) {
			t.Fatalf("admission %d: under a lease %v", i, underLease(a, r.ID))
		}
	}
	n := 0
	for {
		_, err := b.Reserve(ctx, "b", 100)
		if err != nil {
			wantCode(t, err, fault.Deferred, "used its 10 requests")
			break
		}
		n++
	}
	if n != 8 {
		t.Fatalf("b admitted %d, want the 8 the allowance leaves", n)
	}
	wantCode(t, must(a.Reserve(ctx, "a", 100)), fault.Deferred, "used its 10 requests")
	st, err := a.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.WindowRequests != 10 || st.WindowBytes != 1000 || st.LeasedRequests != 0 || len(st.Open) != 10 {
		t.Fatalf("status %+v", st)
	}
}

// A cooldown set by one host stops admissions under another host's lease.
func TestCooldownStopsLeases(t *testing.T) {
	loc := pgtest.URL(t)
	ctx := context.Background()
	a := open(t, loc, policy(100, 1<<20), nil)
	b := open(t, loc, policy(100, 1<<20), nil)
	for range 2 {
		if _, err := a.Reserve(ctx, "a", 10); err != nil {
			t.Fatal(err)
		}
	}
	if a.currentLease() == nil {
		t.Fatal("a holds no lease")
	}
	r, err := b.Reserve(ctx, "b", 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Settle(ctx, r.ID, 10, Outcome{Status: 429, RetryAfter: "3600"}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, must(a.Reserve(ctx, "a", 10)), fault.Deferred, "cooling down")
}

// A lease held by a process that was killed is taken back once it has
// expired, unused part and all, without waiting for an admission to need
// it; what the process admitted stays charged.
func TestKilledHoldersLeaseExpires(t *testing.T) {
	loc := pgtest.URL(t)
	ctx := context.Background()
	var offset atomic.Int64
	clock := func() Instant {
		in := SystemClock()
		d := time.Duration(offset.Load())
		in.Wall, in.Boot = in.Wall.Add(d), in.Boot+d
		return in
	}
	b, err := Open(ctx, loc, policy(10, 1000), &Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := testkit.StartChild(t, "TestChildHoldLease", childEnv+"="+loc)
	sc := bufio.NewScanner(c.Stdout)
	if !sc.Scan() || sc.Text() != "held" {
		t.Fatalf("child: %q", sc.Text())
	}
	c.Kill(t)
	if killed, _ := c.Wait(); !killed {
		t.Fatal("child not killed")
	}
	st, err := b.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The child's first admission came with a lease of 4 requests and
	// 400 bytes; its second was under it.
	if st.Leases != 1 || st.LeasedRequests != 3 || st.LeasedBytes != 300 || st.WindowRequests != 2 || st.WindowBytes != 200 || len(st.Open) != 2 {
		t.Fatalf("before expiry: %+v", st)
	}
	offset.Store(int64(limits.BudgetLeaseTTL + time.Second))
	if st, err = b.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if st.Leases != 0 || st.WindowRequests != 2 || st.WindowBytes != 200 || len(st.Open) != 2 {
		t.Fatalf("after expiry: %+v", st)
	}
	if _, err := b.Reserve(ctx, "x", 800); err != nil {
		t.Fatal(err)
	}
	wantCode(t, must(b.Reserve(ctx, "x", 1)), fault.Deferred, "0 of its 1000 bytes left")
}

func TestChildHoldLease(t *testing.T) {
	loc := os.Getenv(childEnv)
	if loc == "" {
		t.Skip("child process body")
	}
	b, err := OpenExisting(context.Background(), loc, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		r, err := b.Reserve(context.Background(), "victim", 100)
		if err != nil || underLease(b, r.ID) != (i == 1) {
			t.Fatalf("admission %d: %v", i, err)
		}
	}
	fmt.Println("held")
	time.Sleep(time.Minute) // killed long before
}

// SIGKILL after Settle returned but before its deferred write leaves the
// bytes charged.
func TestKillBeforeDeferredSettlementIsWritten(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		b := open(t, loc, policy(10, 1000), nil)
		killChargedChild(t, b, loc, "TestChildSettleAndHang", "settled")
	})
}

func TestChildSettleAndHang(t *testing.T) {
	loc := os.Getenv(childEnv)
	if loc == "" {
		t.Skip("child process body")
	}
	b, err := OpenExisting(context.Background(), loc, &Options{SettleDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Reserve(context.Background(), "victim", 600)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Settle(context.Background(), r.ID, 100, Outcome{Status: 200}); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("settled %s\n", r.ID)
	time.Sleep(time.Minute) // killed long before
}

// A deferred settlement is written within the delay without any further
// call, and another process then sees the bytes returned.
func TestDeferredSettlementIsWritten(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		b, err := Open(ctx, loc, policy(10, 1000), &Options{SettleDelay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		r, err := b.Reserve(ctx, "a", 500)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Settle(ctx, r.ID, 100, Outcome{}); err != nil {
			t.Fatal(err)
		}
		wantCode(t, b.Settle(ctx, r.ID, 100, Outcome{}), fault.NotFound, "not open")
		other := open(t, loc, policy(10, 1000), nil)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			st, err := other.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Open) == 0 {
				if st.WindowBytes != 100 {
					t.Fatalf("settled: %+v", st)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the deferred settlement was not written within 30 s")
			}
		}
		wantCode(t, b.Settle(ctx, r.ID, 100, Outcome{}), fault.NotFound, "not open")
	})
}

// A lease takes half of what the window has left, at most
// limits.BudgetLeaseMaxRequests requests (at the bound and one past).
func TestLeaseSize(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ requests, want int64 }{
		{2*limits.BudgetLeaseMaxRequests + 1, limits.BudgetLeaseMaxRequests},
		{2*limits.BudgetLeaseMaxRequests + 3, limits.BudgetLeaseMaxRequests},
		{2*limits.BudgetLeaseMaxRequests - 1, limits.BudgetLeaseMaxRequests - 1},
		{2, 0},
	} {
		b := open(t, pgtest.URL(t), policy(c.requests, 1<<40), nil)
		if _, err := b.Reserve(ctx, "a", 1); err != nil {
			t.Fatal(err)
		}
		got := int64(0)
		if l := b.currentLease(); l != nil {
			got = l.requests
		}
		if got != c.want {
			t.Errorf("window of %d requests: a lease of %d, want %d", c.requests, got, c.want)
		}
	}
}

// The reservations one Budget remembers for deferred settlement are
// bounded: at the bound one more is remembered, past it Settle writes.
func TestTrackedBound(t *testing.T) {
	q := newSettleQueue(time.Hour)
	for i := range limits.BudgetMaxTracked {
		q.track(fmt.Sprint(i), 10, nil)
	}
	q.track("past", 10, nil)
	if ok, err := q.queue(fmt.Sprint(limits.BudgetMaxTracked-1), 5); !ok || err != nil {
		t.Fatalf("the last one within the bound: %v %v", ok, err)
	}
	if ok, _ := q.queue("past", 5); ok {
		t.Fatal("one past the bound was remembered")
	}
}

// A root made before leases and deadlines (no lease or due columns on its
// reservations) opens, gains the columns and keeps its accounting.
func TestRootFromBeforeLeases(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		b := open(t, loc, policy(10, 1000), nil)
		r, err := b.Reserve(ctx, "a", 100)
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		old := open(t, loc, policy(10, 1000), nil)
		err = old.s.tx(ctx, func(tx *sql.Tx) error {
			for _, c := range []string{"lease", "due_wall", "due_boot_id", "due_boot"} {
				if _, err := tx.ExecContext(ctx, `ALTER TABLE budget_reservation DROP COLUMN `+c); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		old.Close()
		b = open(t, loc, policy(10, 1000), nil)
		if err := b.Settle(ctx, r.ID, 40, Outcome{}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := b.Reserve(ctx, "a", 100); err != nil {
				t.Fatal(err)
			}
		}
		st, err := b.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.WindowRequests != 3 || st.WindowBytes != 240 {
			t.Fatalf("status %+v", st)
		}
	})
}

// A refund credited to a lease lets it admit again: returning the lease
// then counts what its rows are charged, not what they reserved, so the
// lease (and the group's every later locked transaction) is not refused
// as an integrity failure.
func TestLeaseReturnedAfterRefund(t *testing.T) {
	loc := pgtest.URL(t)
	ctx := context.Background()
	a := open(t, loc, policy(10, 1000), nil)
	first, err := a.Reserve(ctx, "a", 10)
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Reserve(ctx, "a", 40)
	if err != nil || !underLease(a, r.ID) {
		t.Fatalf("second admission under a lease %v: %v", err == nil && underLease(a, r.ID), err)
	}
	if err := a.Settle(ctx, r.ID, 0, Outcome{}); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := a.Reserve(ctx, "a", 40)
	if err != nil || !underLease(a, again.ID) {
		t.Fatalf("admission after the refund under the lease %v: %v", err == nil && underLease(a, again.ID), err)
	}
	other := open(t, loc, policy(10, 1000), nil)
	st, err := other.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = other.Status(ctx); err != nil {
		t.Fatal(err)
	}
	// Charged: the first 10 and the open 40; the refunded row used 0.
	if st.LeasedRequests != 0 || st.WindowBytes != 50 || st.WindowRequests != 3 || len(st.Open) != 2 {
		t.Fatalf("after the lease came back: %+v (first %s)", st, first.ID)
	}
}

// A host that takes no leases itself (NoLease) leaves other hosts' leases
// standing: whether they may stand is the policy's question, not its.
func TestNoLeaseHostLeavesLeases(t *testing.T) {
	loc := pgtest.URL(t)
	ctx := context.Background()
	a := open(t, loc, policy(10, 1000), nil)
	for range 2 {
		if _, err := a.Reserve(ctx, "a", 10); err != nil {
			t.Fatal(err)
		}
	}
	b, err := Open(ctx, loc, policy(10, 1000), &Options{NoLease: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Reserve(ctx, "b", 10); err != nil {
		t.Fatal(err)
	}
	st, err := b.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Leases != 1 {
		t.Fatalf("a's lease after a NoLease host's admission and status: %+v", st)
	}
}
