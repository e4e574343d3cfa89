package budget

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

// logLines are the lines a Budget's Options.Log wrote.
func logLines(log *testkit.Buffer) []string {
	return strings.Split(strings.TrimSpace(log.String()), "\n")
}

// openLogged opens a Budget whose log the test reads, with a settlement
// delay of delay.
func openLogged(t *testing.T, loc string, delay time.Duration) (*Budget, *testkit.Buffer) {
	t.Helper()
	log := &testkit.Buffer{}
	b, err := Open(context.Background(), loc, policy(100, 1<<20), &Options{SettleDelay: delay, Log: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, log
}

// reserveN reserves 100 bytes n times for host "a" and returns the
// reservations' IDs.
func reserveN(t *testing.T, b *Budget, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		r, err := b.Reserve(context.Background(), "a", 100)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

// openIDs are the reservations another process sees open (charged in
// full), after folding the settlements written.
func openIDs(t *testing.T, observer *Budget) map[string]bool {
	t.Helper()
	st, err := observer.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, r := range st.Open {
		ids[r.ID] = true
	}
	return ids
}

// failSettlements makes the store refuse every write of a settlement
// (a trigger on the column a settlement sets) until restore runs, through
// any open Budget of the root.
func failSettlements(t *testing.T, b *Budget) (restore func(via *Budget)) {
	t.Helper()
	ctx := context.Background()
	install := []string{`CREATE TRIGGER fail_settle BEFORE UPDATE OF used ON budget_reservation BEGIN SELECT RAISE(ABORT, 'settlements refused by the test'); END`}
	remove := `DROP TRIGGER fail_settle`
	if b.s.d == postgresDialect {
		install = []string{
			`CREATE OR REPLACE FUNCTION fail_settle() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'settlements refused by the test'; END $$`,
			`CREATE TRIGGER fail_settle BEFORE UPDATE OF used ON budget_reservation FOR EACH ROW EXECUTE FUNCTION fail_settle()`,
		}
		remove = `DROP TRIGGER fail_settle ON budget_reservation`
	}
	for _, q := range install {
		if _, err := b.s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return func(via *Budget) {
		if _, err := via.s.db.ExecContext(ctx, remove); err != nil {
			t.Fatal(err)
		}
	}
}

// A deferred settlement whose write the store refuses is reported by the
// write (Flush here) and stays queued: its reservation stays charged in
// full meanwhile, and the next batch (a status) writes it.
func TestSettlementWriteFailureRetried(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		b, _ := openLogged(t, loc, time.Hour)
		observer := open(t, loc, policy(100, 1<<20), nil)
		r, err := b.Reserve(ctx, "a", 100)
		if err != nil {
			t.Fatal(err)
		}
		restore := failSettlements(t, b)
		if err := b.Settle(ctx, r.ID, 40, Outcome{}); err != nil {
			t.Fatal(err)
		}
		err = b.Flush(ctx)
		if fault.CodeOf(err) != fault.IO || !strings.Contains(err.Error(), "settlements refused by the test") {
			t.Fatalf("Flush with the store refusing: %v, want the store's failure", err)
		}
		if !openIDs(t, observer)[r.ID] {
			t.Fatal("the reservation is not charged in full after its settlement failed")
		}
		wantCode(t, b.Settle(ctx, r.ID, 40, Outcome{}), fault.NotFound, "not open")
		restore(b)
		st, err := b.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Open) != 0 || st.WindowBytes != 40 {
			t.Fatalf("the next batch did not write the settlement: %+v", st)
		}
	})
}

// A settlement whose write the store refuses does not make the admission
// whose batch it rode in fail: the admission is committed without it,
// and the settlement stays queued for the next batch.
func TestSettlementWriteFailureSparesAdmission(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		b, _ := openLogged(t, loc, time.Hour)
		observer := open(t, loc, policy(100, 1<<20), nil)
		r, err := b.Reserve(ctx, "a", 100)
		if err != nil {
			t.Fatal(err)
		}
		restore := failSettlements(t, b)
		if err := b.Settle(ctx, r.ID, 40, Outcome{}); err != nil {
			t.Fatal(err)
		}
		// An admission is a locked batch on SQLite (on PostgreSQL a lease
		// serves it, whose statement carries no settlements); a status is
		// one on both.
		if _, err := b.Reserve(ctx, "a", 100); err != nil {
			t.Fatalf("an admission, with a settlement the store refuses queued: %v", err)
		}
		if _, err := b.Status(ctx); err != nil {
			t.Fatalf("a status, with a settlement the store refuses queued: %v", err)
		}
		if !openIDs(t, observer)[r.ID] {
			t.Fatal("the reservation is not charged in full after its settlement failed")
		}
		restore(b)
		if err := b.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if openIDs(t, observer)[r.ID] {
			t.Fatal("the settlement was not written after the store took writes again")
		}
	})
}

// A deferred settlement that no batch carries is written alone after the
// delay; when the store refuses that write, the settlements are dropped
// (their reservations stay charged in full) and the log says so.
func TestSettlementFlushFailureLogged(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		b, log := openLogged(t, loc, time.Millisecond)
		observer := open(t, loc, policy(100, 1<<20), nil)
		ids := reserveN(t, b, 2)
		restore := failSettlements(t, b)
		defer restore(b)
		for _, id := range ids {
			if err := b.Settle(ctx, id, 40, Outcome{}); err != nil {
				t.Fatal(err)
			}
		}
		// The second settlement may come after the first one's flush:
		// then each has its own warning.
		deadline := time.Now().Add(time.Minute)
		for dropped(log) < 2 {
			if time.Now().After(deadline) {
				t.Fatalf("the warnings do not count both settlements: %q", log.String())
			}
			time.Sleep(time.Millisecond)
		}
		for _, line := range logLines(log) {
			for _, want := range []string{"level=WARN", "deferred settlements could not be written; their reservations stay charged in full", "settlements refused by the test", "root="} {
				if !strings.Contains(line, want) {
					t.Errorf("the warning %q does not hold %q", line, want)
				}
			}
		}
		open := openIDs(t, observer)
		if !open[ids[0]] || !open[ids[1]] {
			t.Fatalf("the dropped settlements' reservations are not charged in full: open %v", open)
		}
	})
}

// dropped sums the settlements the log's warnings count.
func dropped(log *testkit.Buffer) int {
	n := 0
	for _, line := range logLines(log) {
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "settlements="); ok {
				k, _ := strconv.Atoi(v)
				n += k
			}
		}
	}
	return n
}

// Close counts the deferred settlements it could not write in its error;
// their reservations stay charged in full.
func TestCloseCountsDroppedSettlements(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		b, _ := openLogged(t, loc, time.Hour)
		observer := open(t, loc, policy(100, 1<<20), nil)
		ids := reserveN(t, b, 3)
		restore := failSettlements(t, b)
		for _, id := range ids {
			if err := b.Settle(ctx, id, 10, Outcome{}); err != nil {
				t.Fatal(err)
			}
		}
		err := b.Close()
		wantCode(t, err, fault.IO, "3 deferred settlements were not written; their reservations stay charged", "settlements refused by the test")
		restore(observer)
		open := openIDs(t, observer)
		for _, id := range ids {
			if !open[id] {
				t.Errorf("reservation %s is not charged in full after Close dropped its settlement", id)
			}
		}
	})
}

// At the tracking bound one more reservation is remembered and its
// settlement deferred; one past it, the settlement is written before
// Settle returns and the log says why, once for the first such admission
// and at each doubling.
func TestTrackedBoundWarns(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		b, log := openLogged(t, loc, time.Hour)
		observer := open(t, loc, policy(100, 1<<20), nil)
		for i := range limits.BudgetMaxTracked - 1 {
			b.s.q.track(fmt.Sprint("never-settled-", i), 1, nil)
		}
		at, err := b.Reserve(ctx, "a", 100)
		if err != nil {
			t.Fatal(err)
		}
		if log.String() != "" {
			t.Fatalf("logged at the bound: %s", log)
		}
		past, err := b.Reserve(ctx, "a", 100)
		if err != nil {
			t.Fatal(err)
		}
		lines := logLines(log)
		if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "not deferred") ||
			!strings.Contains(lines[0], fmt.Sprint("remembered=", limits.BudgetMaxTracked)) || !strings.Contains(lines[0], "not_remembered=1") {
			t.Fatalf("one past the bound, the log: %q", lines)
		}
		// One past the bound: durable when Settle returns.
		if err := b.Settle(ctx, past.ID, 10, Outcome{}); err != nil {
			t.Fatal(err)
		}
		if openIDs(t, observer)[past.ID] {
			t.Fatal("the settlement past the bound was not written before Settle returned")
		}
		// At the bound: deferred (no batch of b ran since).
		if err := b.Settle(ctx, at.ID, 10, Outcome{}); err != nil {
			t.Fatal(err)
		}
		if !openIDs(t, observer)[at.ID] {
			t.Fatal("the settlement at the bound was written before Settle returned (not deferred)")
		}
		// On SQLite the next admission's batch writes it, which frees its
		// place for that admission; on PostgreSQL a lease serves these,
		// and a lease statement carries no settlements. Either way the
		// fourth admission not remembered is among the four.
		for range 4 {
			if _, err := b.Reserve(ctx, "a", 1); err != nil {
				t.Fatal(err)
			}
		}
		if lines := logLines(log); len(lines) != 3 || !strings.Contains(lines[1], "not_remembered=2") || !strings.Contains(lines[2], "not_remembered=4") {
			t.Fatalf("after 4 not remembered, the log: %q", lines)
		}
	})
}
