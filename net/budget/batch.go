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

// Admissions and settlements from one process are committed in batches:
// while one transaction commits, the calls that arrive queue up and go
// into the next one, so concurrent callers share a durable commit instead
// of each waiting for its own. Every caller returns only after the
// transaction holding its change committed.
//
// There are two queues. Locked batches hold the group row (admissions,
// cooldowns): they serialise with every other host's. Plain settlements
// only record the bytes used on their reservation row, in batches of
// their own that run beside the locked ones; the next locked transaction
// (an admission, status, a seal) folds the recorded settlements into the
// counters. Until then the unused bytes stay charged, which only ever
// errs on the side of admitting less.
//
// An operation refuses (returns a *fault.Error) only before it writes, so
// a refusal leaves the batch's other operations intact; any other error
// rolls the batch back and its operations are run again one by one.

// op is one queued operation, and the task it will touch (read with the
// others' before the batch runs).
type op struct {
	fn   func(ctx context.Context, bs *batchState) error
	task string
	done chan error
}

// batchState is what a batch's operations share: the transaction and, in
// a locked batch, the group row (read once, written once at the end) and
// the task rows they touched.
type batchState struct {
	s *store
	t *sql.Tx
	// q is t, for operations written against querier.
	q       querier
	g       *GroupState
	tasks   map[string]*TaskState
	dirty   []*TaskState
	inserts []newReservation
}

// querier is what *sql.Tx and *sql.DB share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// task returns a task's row, read once per batch.
func (bs *batchState) task(ctx context.Context, name string) (*TaskState, error) {
	if ts, ok := bs.tasks[name]; ok {
		return ts, nil
	}
	m, err := bs.s.loadTasks(ctx, bs.t, []string{name})
	if err != nil {
		return nil, err
	}
	bs.tasks[name] = m[name]
	return m[name], nil
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

// lockGroup reads and locks the group row and folds in the settlements
// recorded since the last locked transaction.
func (bs *batchState) lockGroup(ctx context.Context, ops []*op) error {
	g, err := bs.s.loadGroup(ctx, bs.t)
	if err != nil {
		return err
	}
	bs.g = g
	rows, err := bs.t.QueryContext(ctx, `DELETE FROM budget_reservation WHERE used IS NOT NULL RETURNING task, bytes, used, win_seq`)
	if err != nil {
		return err
	}
	var done []settled
	for rows.Next() {
		var r settled
		if err := rows.Scan(&r.task, &r.reserved, &r.used, &r.wseq); err != nil {
			rows.Close()
			return err
		}
		done = append(done, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if err := bs.prefetch(ctx, ops, done); err != nil {
		return err
	}
	for _, r := range done {
		ts, err := bs.task(ctx, r.task)
		if err != nil {
			return err
		}
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
	return nil
}

// settled is a recorded settlement being folded in.
type settled struct {
	task                 string
	reserved, used, wseq int64
}

// prefetch reads, in one query, the rows of the tasks the batch's
// operations and settlements touch.
func (bs *batchState) prefetch(ctx context.Context, ops []*op, done []settled) error {
	var names []string
	seen := map[string]bool{}
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, o := range ops {
		add(o.task)
	}
	for _, r := range done {
		add(r.task)
	}
	m, err := bs.s.loadTasks(ctx, bs.t, names)
	if err != nil {
		return err
	}
	bs.tasks = m
	return nil
}

// flush writes the new reservations, the group row and the touched task
// rows, for the end of
// the batch and for operations that read the tables themselves.
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
	locked  bool
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
		go s.lead(b)
	}
	b.mu.Unlock()
	select {
	case err := <-o.done:
		return err
	case <-ctx.Done():
		return fault.Wrap(fault.Unavailable, ctx.Err(), "budget: gave up waiting for the store; if the change was committed, a reservation shows in capkit budget status")
	}
}

// gather is how long a leader that just committed a batch of several
// operations waits for more before the next one: callers released by a
// commit need a moment to queue their next operation, and each missed one
// waits a whole commit (an fsync) longer.
const gather = 200 * time.Microsecond

// lead commits batches until its queue is empty.
func (s *store) lead(b *batcher) {
	last := 0
	for {
		if last > 1 {
			time.Sleep(gather)
		}
		b.mu.Lock()
		n := min(len(b.pending), limits.BudgetMaxBatch)
		if n == 0 {
			b.leading = false
			b.mu.Unlock()
			return
		}
		ops := b.pending[:n:n]
		b.pending = b.pending[n:]
		b.mu.Unlock()
		s.commit(ops, b.locked)
		last = n
	}
}

// commit runs ops in one transaction and tells each its outcome.
func (s *store) commit(ops []*op, locked bool) {
	ctx, cancel := context.WithTimeout(context.Background(), limits.BudgetBusyTimeout)
	defer cancel()
	var results []error
	err := s.tx(ctx, func(t *sql.Tx) error {
		bs := &batchState{s: s, t: t, q: t, tasks: map[string]*TaskState{}}
		if locked {
			if err := bs.lockGroup(ctx, ops); err != nil {
				return err
			}
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
	if err != nil && len(ops) > 1 {
		for _, o := range ops {
			s.commit([]*op{o}, locked)
		}
		return
	}
	for i, o := range ops {
		if err != nil {
			o.done <- err
		} else {
			o.done <- results[i]
		}
	}
}
