package quota

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit/pgtest"
	"github.com/capkit/capkit/net/budget"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func wantCode(t *testing.T, err error, code fault.Code, part string) {
	t.Helper()
	if fault.CodeOf(err) != code || !strings.Contains(err.Error(), part) {
		t.Fatalf("got %v, want %s mentioning %q", err, code, part)
	}
}

var pol = &budget.Policy{Format: 1, Group: "up", WindowSeconds: 3600, WindowRequests: 20, WindowBytes: 10000, MinIntervalSeconds: 0}

// busyRoot charges a root: two tasks, a settled and an open reservation
// (settled before returning unless keepOpen), and a timed cooldown.
func busyRoot(t *testing.T, loc string, keepOpen bool) (*budget.Budget, string) {
	t.Helper()
	ctx := context.Background()
	b, err := budget.Open(ctx, loc, pol, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	r1, _ := b.Reserve(ctx, "a", 1000)
	r2, _ := b.Reserve(ctx, "b", 2000)
	b.Reserve(ctx, "a", 10)
	if err := b.Settle(ctx, r1.ID, 300, budget.Outcome{Status: 429, RetryAfter: "900"}); err != nil {
		t.Fatal(err)
	}
	if !keepOpen {
		all, _ := b.Status(ctx)
		for _, o := range all.Open {
			b.Settle(ctx, o.ID, o.Bytes, budget.Outcome{})
		}
		// Settlements are deferred: a snapshot from another process sees
		// them once they are written.
		if err := b.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return b, r2.ID
}

// comparable is the accounting a transfer must preserve.
func comparable(t *testing.T, st *budget.Status) string {
	t.Helper()
	c := *st
	c.State, c.TransferredTo, c.Snapshot = "", "", ""
	c.CooldownRemainingSec = float64(time.Duration(c.CooldownRemainingSec * 1e9).Round(time.Minute))
	c.WindowRemainingSecs = float64(time.Duration(c.WindowRemainingSecs * 1e9).Round(time.Minute))
	data, _ := json.Marshal(c)
	return string(data)
}

func TestTransfer(t *testing.T) {
	dests := map[string]func(t *testing.T) string{
		"sqlite-to-sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "new") },
		"sqlite-to-postgres": func(t *testing.T) string { return pgtest.URL(t) },
	}
	for name, dest := range dests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			src := filepath.Join(t.TempDir(), "old")
			b, _ := busyRoot(t, src, false)
			before, _ := b.Status(ctx)
			snap, err := Take(ctx, src, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Through the file, as an operator would review it.
			data, _ := snap.Encode()
			snap, err = Parse(ctx, data)
			if err != nil {
				t.Fatal(err)
			}
			d := dest(t)
			if err := Transfer(ctx, snap, d, nil); err != nil {
				t.Fatal(err)
			}
			nb, err := budget.OpenExisting(ctx, d, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer nb.Close()
			after, _ := nb.Status(ctx)
			if comparable(t, before) != comparable(t, after) || after.CooldownRemainingSec <= 0 || after.State != "active" {
				t.Fatalf("accounting changed:\n%s\n%s", comparable(t, before), comparable(t, after))
			}
			// The old root refuses, the new one continues the same window.
			_, err = b.Reserve(ctx, "a", 1)
			if !errors.Is(err, budget.ErrTransferred) || fault.CodeOf(err) != fault.Denied {
				t.Fatalf("old root after transfer: %v", err)
			}
			nb.ClearCooldown(ctx)
			if _, err := nb.Reserve(ctx, "a", 1); err != nil {
				t.Fatal(err)
			}
			// Exactly one new root: not again, not elsewhere.
			wantCode(t, Transfer(ctx, snap, filepath.Join(t.TempDir(), "second"), nil), fault.Conflict, "exactly one new root")
		})
	}
}

func TestTakeRefusesUnquiesced(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "old")
	b, _ := busyRoot(t, src, true)
	_, err := Take(ctx, src, nil)
	wantCode(t, err, fault.Conflict, "not quiesced")
	st, _ := b.Status(ctx)
	if st.State != "active" || len(st.Open) == 0 {
		t.Fatalf("a refused snapshot must leave the root active: %+v", st)
	}
	for _, o := range st.Open {
		b.Settle(ctx, o.ID, o.Bytes, budget.Outcome{})
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := Take(ctx, src, nil); err != nil {
		t.Fatal(err)
	}
	_, err = Take(ctx, src, nil)
	wantCode(t, err, fault.Conflict, "already sealed")
	_, err = b.Reserve(ctx, "a", 1)
	wantCode(t, err, fault.Denied, "sealed")
}

// An outstanding lease (PostgreSQL) does not keep a root from being
// quiesced: Take takes it back. Reservations admitted under it count as
// open until their settlements are written, and the holder's next
// admission finds the root sealed.
func TestTakeTakesLeasesBack(t *testing.T) {
	ctx := context.Background()
	src := pgtest.URL(t)
	// The settlements below wait for Flush, however slow the machine.
	b, err := budget.Open(ctx, src, pol, &budget.Options{SettleDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r1, err := b.Reserve(ctx, "a", 100) // through the group row; a lease comes with it
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.Reserve(ctx, "a", 100) // under the lease
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := b.Status(ctx); st.Leases != 1 || st.LeasedRequests == 0 || st.WindowRequests != 2 {
		t.Fatalf("want one lease beside two admissions: %+v", st)
	}
	b.Settle(ctx, r1.ID, 50, budget.Outcome{})
	b.Settle(ctx, r2.ID, 60, budget.Outcome{})
	// Deferred, not yet written: the reservations are open.
	_, err = Take(ctx, src, nil)
	wantCode(t, err, fault.Conflict, "2 reservations are open")
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	snap, err := Take(ctx, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := snap.Group
	if g.WindowRequests != 2 || g.WindowBytes != 110 || g.TotalRequests != 2 || g.TotalBytes != 110 {
		t.Fatalf("the lease's unused part must be back: %+v", g)
	}
	_, err = b.Reserve(ctx, "a", 1)
	wantCode(t, err, fault.Denied, "sealed")
	dest := filepath.Join(t.TempDir(), "new")
	if err := Transfer(ctx, snap, dest, nil); err != nil {
		t.Fatal(err)
	}
	nb, err := budget.OpenExisting(ctx, dest, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	if st, _ := nb.Status(ctx); st.WindowRequests != 2 || st.WindowBytes != 110 || len(st.Tasks) != 1 || st.Tasks[0].WindowBytes != 110 {
		t.Fatalf("transferred: %+v", st)
	}
}

func TestTransferRefusals(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "old")
	busyRoot(t, src, false)
	snap, err := Take(ctx, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	// An existing destination (SQLite, PostgreSQL) is refused.
	existing := filepath.Join(t.TempDir(), "existing")
	os.Mkdir(existing, 0o700)
	wantCode(t, Transfer(ctx, snap, existing, nil), fault.Conflict, "already exists")
	// The destination was recorded, so even after that refusal the
	// snapshot can only go there.
	pg := pgtest.URL(t)
	other, _ := budget.Open(ctx, pg, pol, nil)
	other.Close()
	wantCode(t, Transfer(ctx, snap, pg, nil), fault.Conflict, "exactly one new root")
	// An edited snapshot resets nothing.
	edited := *snap
	edited.Group.WindowRequests = 0
	wantCode(t, Transfer(ctx, &edited, filepath.Join(t.TempDir(), "x"), nil), fault.Integrity, "differs")
	// Strict parsing.
	data, _ := snap.Encode()
	_, err = Parse(ctx, bytes.Replace(data, []byte(`"format": 1,`), []byte(`"format": 1, "extra": 1,`), 1))
	wantCode(t, err, fault.InvalidInput, "unknown field")
}

func TestTransferToPostgresRefusesExisting(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "old")
	busyRoot(t, src, false)
	snap, err := Take(ctx, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	pg := pgtest.URL(t)
	other, _ := budget.Open(ctx, pg, pol, nil)
	other.Close()
	wantCode(t, Transfer(ctx, snap, pg, nil), fault.Conflict, "already holds a budget")
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"format": 1, "id": "x", "source": "/r", "taken": "2026-01-01T00:00:00Z", "policy": {"format": 1, "group": "g", "window_seconds": 1, "window_requests": 1, "window_bytes": 1}, "group": {}, "tasks": []}`))
	f.Add([]byte(`{"format": 1, "id": "x", "id": "y"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(context.Background(), data)
		if err != nil {
			if c := fault.CodeOf(err); c != fault.InvalidInput && c != fault.Limit {
				t.Fatalf("code %s: %v", c, err)
			}
			return
		}
		if s.Format != 1 || s.ID == "" || s.Source == "" {
			t.Fatalf("accepted %+v", s)
		}
	})
}
