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

// op is one queued operation.
type op struct {
	fn   func(ctx context.Context, bs *batchState) error
	done chan error
}

// batchState is what a batch's operations share: the transaction and, in
// a locked batch, the group row (read once, written once at the end) and
// the task rows they touched.
type batchState struct {
	s     *store
	t     *sql.Tx
	g     *GroupState
	tasks map[string]*TaskState
	dirty []*TaskState
}

// task returns a task's row, read once per batch.
func (bs *batchState) task(ctx context.Context, name string) (*TaskState, error) {
	if ts, ok := bs.tasks[name]; ok {
		return ts, nil
	}
	ts, err := bs.s.loadTask(ctx, bs.t, name)
	if err != nil {
		return nil, err
	}
	bs.tasks[name] = ts
	return ts, nil
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
func (bs *batchState) lockGroup(ctx context.Context) error {
	g, err := bs.s.loadGroup(ctx, bs.t)
	if err != nil {
		return err
	}
	bs.g = g
	rows, err := bs.t.QueryContext(ctx, `DELETE FROM budget_reservation WHERE used IS NOT NULL RETURNING task, bytes, used, win_seq`)
	if err != nil {
		return err
	}
	type settled struct {
		task                 string
		reserved, used, wseq int64
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

// flush writes the group row and the touched task rows, for the end of
// the batch and for operations that read the tables themselves.
func (bs *batchState) flush(ctx context.Context) error {
	if bs.g == nil {
		return nil
	}
	if err := bs.s.saveGroup(ctx, bs.t, bs.g); err != nil {
		return err
	}
	for _, ts := range bs.dirty {
		if err := bs.s.saveTask(ctx, bs.t, ts); err != nil {
			return err
		}
	}
	bs.dirty = bs.dirty[:0]
	return nil
}

// batcher queues operations of one kind for one store.
type batcher struct {
	mu      sync.Mutex
	pending []*op
	leading bool
	locked  bool
}

// locked runs fn in a shared transaction holding the group row.
func (s *store) locked(ctx context.Context, fn func(ctx context.Context, bs *batchState) error) error {
	return s.enqueue(ctx, &s.lockedB, fn)
}

// unlocked runs fn in a shared transaction that does not touch the group
// row.
func (s *store) unlocked(ctx context.Context, fn func(ctx context.Context, bs *batchState) error) error {
	return s.enqueue(ctx, &s.freeB, fn)
}

func (s *store) enqueue(ctx context.Context, b *batcher, fn func(ctx context.Context, bs *batchState) error) error {
	o := &op{fn: fn, done: make(chan error, 1)}
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
		bs := &batchState{s: s, t: t, tasks: map[string]*TaskState{}}
		if locked {
			if err := bs.lockGroup(ctx); err != nil {
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
