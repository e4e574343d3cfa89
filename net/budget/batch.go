package budget

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Admissions and writes from one process are committed in batches: while
// one transaction commits, the calls that arrive queue up and go into the
// next one, so concurrent callers share a durable commit instead of each
// waiting for its own. A leader that just committed several operations
// waits, briefly, until as many are queued again (the callers it released
// come back) before it starts the next batch. Every caller returns only
// after the transaction holding its change committed. Every batch also
// writes the settlements queued for deferral (deferred.go).
//
// There are three queues. Admissions under a lease (PostgreSQL) are one
// statement per batch without the group row (lease.go). Locked batches
// hold the group row (other admissions, cooldowns, status, seals): they
// serialise with every other host's.
// Plain settlements of reservations this Budget does not remember only
// record the bytes used on their reservation row, in batches of their own
// that run beside the locked ones; the next locked transaction (an
// admission, status, a seal) folds the recorded settlements into the
// counters. Until then the unused bytes stay charged, which only ever
// errs on the side of admitting less.
//
// An operation refuses (returns a *fault.Error) only before it writes
// anything of its own (taking leases back may precede a refusal: that
// stands on its own), so a refusal leaves the batch's other operations
// intact; any other error rolls the batch back and its operations are run
// again: without the deferred settlements when it carried some (they may
// be what failed: they wait for the next batch or their own flush),
// otherwise one by one.

// op is one queued operation, and the task it will touch (read with the
// others' before the batch runs).
type op struct {
	fn   func(ctx context.Context, bs *batchState) error
	task string
	// adm is an admission under a lease (lease batches only).
	adm *admission
	// flush marks Flush's operation, whose purpose is the settlements
	// its batch writes.
	flush bool
	done  chan error
}

// batchState is what a batch's operations share: the transaction and, in
// a locked batch, the group row (read once, written once at the end), the
// task rows they touched and the outstanding leases.
type batchState struct {
	s *store
	b *Budget
	t *sql.Tx
	// q is t, for operations written against querier.
	q       querier
	g       *GroupState
	tasks   map[string]*TaskState
	dirty   []*TaskState
	inserts []newReservation
	leases  []*leaseRow
	// granted is the lease this batch gave its Budget, installed when the
	// batch commits.
	granted *lease
}

// querier is what *sql.Tx and *sql.DB share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// task returns a task's row, read once per batch.
func (bs *batchState) task(ctx context.Context, name string) (*TaskState, error) {
	if err := bs.need(ctx, []string{name}); err != nil {
		return nil, err
	}
	return bs.tasks[name], nil
}

// need reads, in one query, the rows of the named tasks not yet read.
func (bs *batchState) need(ctx context.Context, names []string) error {
	var missing []string
	seen := map[string]bool{}
	for _, n := range names {
		if _, ok := bs.tasks[n]; !ok && n != "" && !seen[n] {
			seen[n] = true
			missing = append(missing, n)
		}
	}
	m, err := bs.s.loadTasks(ctx, bs.t, missing)
	if err != nil {
		return err
	}
	for n, ts := range m {
		bs.tasks[n] = ts
	}
	return nil
}

// touch marks a task row to be written at the end of the batch.
func (bs *batchState) touch(ts *TaskState) {
	for _, d := range bs.dirty {
		if d == ts {
			return
		}
	}
	bs.dirty = append(bs.dirty, ts)
}

// lockGroup reads and locks the group row, writes the deferred
// settlements ps (returning those that found their reservation open),
// takes back the leases that are over (expired, of an earlier window, or
// all of them when this Budget's policy admits without leases) and folds
// in the settlements recorded since the last locked transaction.
func (bs *batchState) lockGroup(ctx context.Context, ops []*op, ps []pendingSettle) (map[string]bool, error) {
	g, err := bs.s.loadGroup(ctx, bs.t)
	if err != nil {
		return nil, err
	}
	bs.g = g
	matched, err := bs.s.writeSettles(ctx, bs.t, ps)
	if err != nil {
		return nil, err
	}
	if bs.s.d == postgresDialect {
		if err := bs.loadLeases(ctx); err != nil {
			return nil, err
		}
		now, leasable := bs.b.clock(), bs.b.leasable
		err := bs.returnLeases(ctx, func(l *leaseRow) bool {
			return !leasable || l.seq < g.WindowSeq || l.expires.remaining(now) == 0
		})
		if err != nil {
			return nil, err
		}
	}
	return matched, bs.fold(ctx, ops)
}

// fold deletes the settled reservation rows not under a lease and
// returns their unused bytes to their window, if still current; it first
// reads the rows of the tasks they and ops touch.
func (bs *batchState) fold(ctx context.Context, ops []*op) error {
	rows, err := bs.t.QueryContext(ctx, `DELETE FROM budget_reservation WHERE used IS NOT NULL AND lease IS NULL RETURNING task, bytes, used, win_seq`)
	if err != nil {
		return err
	}
	done, err := scanSettled(rows, nil)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(ops)+len(done))
	for _, o := range ops {
		names = append(names, o.task)
	}
	for _, r := range done {
		names = append(names, r.task)
	}
	if err := bs.need(ctx, names); err != nil {
		return err
	}
	bs.refund(done)
	return nil
}

// refund returns the unused bytes of settled reservations (whose tasks
// were read) to the window they were charged in, if still current, and
// to the totals.
func (bs *batchState) refund(done []settled) {
	g := bs.g
	for _, r := range done {
		ts := bs.tasks[r.task]
		refund := r.reserved - r.used
		g.TotalBytes -= refund
		ts.TotalBytes -= refund
		if r.wseq == g.WindowSeq {
			g.WindowBytes -= refund
		}
		if r.wseq == ts.WindowSeq {
			ts.WindowBytes -= refund
		}
		bs.touch(ts)
	}
}

// scanSettled appends the settled rows (task, bytes, used, win_seq) to
// out, and closes rows.
func scanSettled(rows *sql.Rows, out []settled) ([]settled, error) {
	defer rows.Close()
	for rows.Next() {
		var r settled
		if err := rows.Scan(&r.task, &r.reserved, &r.used, &r.wseq); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// settled is a recorded settlement being folded in.
type settled struct {
	task                 string
	reserved, used, wseq int64
}

// flush writes the new reservations, the group row and the touched task
// rows, for the end of the batch and for operations that read the tables
// themselves.
func (bs *batchState) flush(ctx context.Context) error {
	if bs.g == nil {
		return nil
	}
	if err := bs.s.insertReservations(ctx, bs.t, bs.inserts); err != nil {
		return err
	}
	if err := bs.s.saveTasks(ctx, bs.t, bs.dirty); err != nil {
		return err
	}
	bs.inserts, bs.dirty = bs.inserts[:0], bs.dirty[:0]
	return bs.s.saveGroup(ctx, bs.t, bs.g)
}

// batcher queues operations of one kind for one store.
type batcher struct {
	mu      sync.Mutex
	pending []*op
	leading bool
	// second: a second leader runs, which it does only while at least
	// secondAt operations wait (and secondAt > 0).
	second   bool
	secondAt int
	// commit runs one batch and tells each op its outcome.
	commit func(ops []*op)
	// want is how many queued operations wake a waiting leader (on full).
	want int
	full chan struct{}
}

// locked runs fn in a shared transaction holding the group row.
// task names the task fn touches, if any.
func (s *store) locked(ctx context.Context, task string, fn func(ctx context.Context, bs *batchState) error) error {
	return s.enqueue(ctx, &s.lockedB, &op{fn: fn, task: task, done: make(chan error, 1)})
}

// unlocked runs fn, whose one write needs no group row, in a shared
// transaction of its own queue, beside the locked ones. (Running each
// PostgreSQL settlement as its own statement instead was slower: their WAL
// flushes delayed the locked commits, bench/RESULTS.md.)
func (s *store) unlocked(ctx context.Context, fn func(ctx context.Context, bs *batchState) error) error {
	return s.enqueue(ctx, &s.freeB, &op{fn: fn, done: make(chan error, 1)})
}

func (s *store) enqueue(ctx context.Context, b *batcher, o *op) error {
	b.mu.Lock()
	b.pending = append(b.pending, o)
	if !b.leading {
		b.leading = true
		go b.lead(false)
	} else if b.secondAt > 0 && !b.second && len(b.pending) >= b.secondAt {
		b.second = true
		go b.lead(true)
	}
	if b.want > 0 && len(b.pending) >= b.want {
		b.want = 0
		close(b.full)
	}
	b.mu.Unlock()
	select {
	case err := <-o.done:
		return err
	case <-ctx.Done():
		return fault.Wrap(fault.Unavailable, ctx.Err(), "budget: gave up waiting for the store; if the change was committed, a reservation shows in capkit budget status")
	}
}

// gather bounds how long a leader that just committed a batch of several
// operations waits for as many to queue again before the next one:
// callers released by a commit need a moment to queue their next
// operation, and each missed one waits a whole commit (an fsync) longer.
const gather = 200 * time.Microsecond

// secondLeaderAt is how many admissions under a lease must wait, while a
// statement of them runs, for a second leader to commit them beside it
// (PostgreSQL flushes both commits' WAL together). A second leader that
// always ran made batches so small that they cost more per admission than
// the wait saved (bench/RESULTS.md).
const secondLeaderAt = 4

// lead commits batches until its queue is empty.
func (b *batcher) lead(second bool) {
	last := 0
	timer := time.NewTimer(gather)
	defer timer.Stop()
	for {
		b.mu.Lock()
		if !second && last > 1 && len(b.pending) < last {
			b.want, b.full = last, make(chan struct{})
			full := b.full
			b.mu.Unlock()
			timer.Reset(gather)
			select {
			case <-full:
			case <-timer.C:
			}
			b.mu.Lock()
			b.want = 0
		}
		n := min(len(b.pending), limits.BudgetMaxBatch)
		if second && n < b.secondAt || n == 0 {
			if second {
				b.second = false
			} else {
				b.leading = false
			}
			b.mu.Unlock()
			return
		}
		ops := b.pending[:n:n]
		b.pending = b.pending[n:]
		b.mu.Unlock()
		b.commit(ops)
		last = n
	}
}

// commit runs ops, and when settles the settlements queued for deferral,
// in one transaction and tells each op its outcome. A failed batch that
// carried settlements runs again without them; one of several operations
// runs again one by one.
func (s *store) commit(ops []*op, locked, settles bool) {
	ctx, cancel := context.WithTimeout(context.Background(), limits.BudgetBusyTimeout)
	defer cancel()
	var ps []pendingSettle
	if settles {
		ps = s.q.take(0)
	}
	var results []error
	var matched map[string]bool
	var last *batchState
	err := s.tx(ctx, func(t *sql.Tx) error {
		bs := &batchState{s: s, b: s.b, t: t, q: t, tasks: map[string]*TaskState{}}
		last = bs
		var err error
		if locked {
			matched, err = bs.lockGroup(ctx, ops, ps)
		} else {
			matched, err = s.writeSettles(ctx, t, ps)
		}
		if err != nil {
			return err
		}
		results = make([]error, len(ops))
		for i, o := range ops {
			err := o.fn(ctx, bs)
			var fe *fault.Error
			if err != nil && !errors.As(err, &fe) {
				return err
			}
			results[i] = err
		}
		return bs.flush(ctx)
	})
	if err != nil {
		s.q.requeue(ps)
		switch {
		case len(ps) > 0:
			s.commitWithoutSettles(ops, locked, err)
			return
		case len(ops) > 1:
			for _, o := range ops {
				s.commit([]*op{o}, locked, settles)
			}
			return
		}
	} else {
		s.q.written(ps, matched)
		if last.granted != nil {
			if old := s.b.setLease(last.granted); old != nil {
				s.b.returnLater(old)
			}
		}
	}
	for i, o := range ops {
		if err != nil {
			o.done <- err
		} else {
			o.done <- results[i]
		}
	}
}

// commitWithoutSettles runs again, without the deferred settlements, the
// ops of a batch that failed while it carried them: the settlements may
// be what failed, and an admission or a status must not fail for them
// (they stay queued for the next batch or their own flush). A Flush among
// ops fails with err: writing them was its purpose.
func (s *store) commitWithoutSettles(ops []*op, locked bool, err error) {
	var rest []*op
	for _, o := range ops {
		if o.flush {
			o.done <- err
		} else {
			rest = append(rest, o)
		}
	}
	if len(rest) > 0 {
		s.commit(rest, locked, false)
	}
}
