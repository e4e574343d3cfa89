package budget

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/store/state"
)

// Sealed is the complete accounting of a sealed root: what a quota
// transfer carries to the new root.
type Sealed struct {
	Policy Policy      `json:"policy"`
	Group  GroupState  `json:"group"`
	Tasks  []TaskState `json:"tasks"`
}

// Seal stops admissions at this root for quota snapshot id and returns its
// accounting. It refuses (conflict) a root with open reservations (not
// quiesced: settle them first; a settlement deferred by a process that
// has not flushed or closed its Budget is not yet written) and a root
// already sealed or transferred. Outstanding leases do not make a root
// unquiesced: Seal takes them back, unused parts included, before it
// counts.
func (b *Budget) Seal(ctx context.Context, id string) (*Sealed, error) {
	var out *Sealed
	err := b.s.locked(ctx, "", func(ctx context.Context, bs *batchState) error {
		if err := bs.flush(ctx); err != nil {
			return err
		}
		g, t := bs.g, bs.t
		if g.State != stateActive {
			return fault.Wrap(fault.Conflict, ErrTransferred, "budget root %s is already %s (snapshot %s)", b.s.locator, g.State, g.SnapshotID)
		}
		// A lease is no reservation: it is taken back here (its holder's
		// next admission under it fails and finds the root sealed), and
		// only reservations admitted under it may be open.
		if err := bs.returnLeases(ctx, allLeases); err != nil {
			return err
		}
		if err := bs.flush(ctx); err != nil {
			return err
		}
		var open int64
		if err := b.s.queryRow(ctx, t, `SELECT COUNT(*) FROM budget_reservation WHERE used IS NULL`).Scan(&open); err != nil {
			return err
		}
		if open > 0 {
			return fault.New(fault.Conflict, "budget root %s is not quiesced: %d reservations are open (stop its users, then settle each listed by capkit budget status)", b.s.locator, open)
		}
		tasks, more, err := b.s.tasks(ctx, t, 0, limits.QuotaMaxTasks)
		if err != nil {
			return err
		}
		if more > 0 {
			return fault.LimitExceeded("budget root tasks in one snapshot", limits.QuotaMaxTasks, int64(limits.QuotaMaxTasks)+more)
		}
		g.State, g.SnapshotID = stateSealed, id
		out = &Sealed{Policy: b.policy, Group: *g, Tasks: tasks}
		return nil
	})
	return out, err
}

// Sealed returns the accounting of a root sealed by snapshot id, as it is
// now, and the destination it is being transferred to, if any.
func (b *Budget) Sealed(ctx context.Context, id string) (*Sealed, string, error) {
	var out *Sealed
	var dest string
	err := b.s.locked(ctx, "", func(ctx context.Context, bs *batchState) error {
		if err := bs.flush(ctx); err != nil {
			return err
		}
		g, t := bs.g, bs.t
		if g.State == stateActive || g.SnapshotID != id {
			return fault.New(fault.Conflict, "budget root %s is not sealed by snapshot %s (state %s, snapshot %q)", b.s.locator, id, g.State, g.SnapshotID)
		}
		tasks, _, err := b.s.tasks(ctx, t, 0, limits.QuotaMaxTasks)
		if err != nil {
			return err
		}
		dest = g.TransferredTo
		out = &Sealed{Policy: b.policy, Group: *g, Tasks: tasks}
		return nil
	})
	return out, dest, err
}

// MarkTransfer records at this sealed root that snapshot id goes to dest:
// first with done false (before the destination exists, so the snapshot
// can never go anywhere else), then with done true. A different
// destination than one recorded is a conflict.
func (b *Budget) MarkTransfer(ctx context.Context, id, dest string, done bool) error {
	return b.s.locked(ctx, "", func(_ context.Context, bs *batchState) error {
		g := bs.g
		if g.State == stateActive || g.SnapshotID != id {
			return fault.New(fault.Conflict, "budget root %s is not sealed by snapshot %s", b.s.locator, id)
		}
		if g.TransferredTo != "" && g.TransferredTo != dest {
			return fault.New(fault.Conflict, "snapshot %s is transferred to %s, not %s: a snapshot goes to exactly one new root", id, g.TransferredTo, dest)
		}
		g.TransferredTo = dest
		if done {
			g.State = stateTransferred
		}
		return nil
	})
}

// Create makes a new root at locator holding s's accounting, active, with
// snapshot id recorded. It refuses (conflict) a locator that already holds
// a budget. A SQLite root is built beside its final place and renamed in
// without replacing anything; a PostgreSQL one is created in one
// transaction.
func Create(ctx context.Context, locator, id string, s *Sealed, opts *Options) error {
	g := s.Group
	g.State, g.SnapshotID, g.TransferredTo = stateActive, id, ""
	if IsPostgres(locator) {
		st, err := openPostgres(ctx, locator)
		if err != nil {
			return err
		}
		defer st.db.Close()
		return st.tx(ctx, func(t *sql.Tx) error { return createIn(ctx, st, t, s, &g, opts, true) })
	}
	dest, err := filepath.Abs(locator)
	if err != nil {
		return fault.Wrap(fault.InvalidInput, err, "budget root: bad path %s", locator)
	}
	if _, err := os.Lstat(dest); err == nil {
		return fault.New(fault.Conflict, "budget root %s already exists; a transfer needs a new root", locator)
	}
	staging, err := os.MkdirTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".staging-")
	if err != nil {
		return fault.Wrap(fault.As(err).Code, err, "budget root %s: cannot stage", locator)
	}
	defer os.RemoveAll(staging)
	st, err := openSQLite(ctx, staging, true)
	if err != nil {
		return err
	}
	err = st.tx(ctx, func(t *sql.Tx) error { return createIn(ctx, st, t, s, &g, opts, false) })
	if cerr := st.db.Close(); err == nil && cerr != nil {
		err = fault.Wrap(fault.IO, cerr, "budget root %s: closing the staged database failed", locator)
	}
	if err != nil {
		return err
	}
	return state.Publish(ctx, staging, dest, nil)
}

func createIn(ctx context.Context, st *store, t *sql.Tx, s *Sealed, g *GroupState, opts *Options, pg bool) error {
	if pg {
		if err := st.exec(ctx, t, `SELECT pg_advisory_xact_lock(7478193)`); err != nil {
			return err
		}
		var exists bool
		if err := st.queryRow(ctx, t, `SELECT to_regclass('budget_meta') IS NOT NULL`).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return fault.New(fault.Conflict, "budget store %s already holds a budget; a transfer needs a new store", st.locator)
		}
	}
	for _, q := range schema {
		if err := st.exec(ctx, t, q); err != nil {
			return err
		}
	}
	b, err := newBudget(st, s.Policy, opts)
	if err != nil {
		return err
	}
	if err := b.create(ctx, t, g); err != nil {
		return err
	}
	if err := b.recordPolicy(ctx, t); err != nil {
		return err
	}
	for chunk := range slices.Chunk(s.Tasks, limits.BudgetMaxBatch) {
		ptrs := make([]*TaskState, len(chunk))
		for i := range chunk {
			ptrs[i] = &chunk[i]
		}
		if err := st.saveTasks(ctx, t, ptrs); err != nil {
			return err
		}
	}
	return nil
}
