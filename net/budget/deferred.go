package budget

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Deferred settlements. A settlement can only lower a charge, so it need
// not be durable before Settle returns: a settlement that is lost leaves
// its reservation charged in full, which is what an unknown outcome gets
// anyway. Settle of a reservation this Budget admitted (and still
// remembers) checks it here, queues it and returns; the next batch of
// this Budget writes it (a locked admission, a status, another
// settlement; an admission under a lease is one statement and carries
// none), or, when none comes within the delay, a transaction of its own;
// Flush and Close write what is queued before they return.

// tracked is a reservation this Budget admitted and has not yet seen
// written as settled.
type tracked struct {
	bytes int64
	// l is the lease it was admitted under, nil for the locked path.
	l *lease
	// settled marks a settlement queued and not yet written.
	settled bool
}

// pendingSettle is a queued settlement.
type pendingSettle struct {
	id   string
	used int64
}

// settleQueue holds the reservations a Budget remembers and the
// settlements waiting to be written.
type settleQueue struct {
	mu        sync.Mutex
	open      map[string]*tracked
	pending   []pendingSettle
	scheduled bool
	closed    bool
	delay     time.Duration
	// flush writes what is queued; run delay after the first settlement
	// that finds no flush scheduled.
	flush func()
	// untracked counts the admissions not remembered (the bound was
	// reached); warn is told at the first and at each doubling.
	untracked int64
	warn      func(untracked int64)
}

func newSettleQueue(delay time.Duration) *settleQueue {
	if delay <= 0 {
		delay = limits.BudgetSettleDelay
	}
	return &settleQueue{open: map[string]*tracked{}, delay: delay}
}

// track remembers an admitted reservation, unless too many already are:
// then its settlement is written before Settle returns, and warn says so
// (at the first such admission and each time their count doubles, so a
// host that never settles is told without a line per admission).
func (q *settleQueue) track(id string, bytes int64, l *lease) {
	q.mu.Lock()
	switch {
	case q.closed:
	case len(q.open) < limits.BudgetMaxTracked:
		q.open[id] = &tracked{bytes: bytes, l: l}
	default:
		q.untracked++
		if n := q.untracked; n&(n-1) == 0 && q.warn != nil {
			q.mu.Unlock()
			q.warn(n)
			return
		}
	}
	q.mu.Unlock()
}

// forget drops a reservation settled another way.
func (q *settleQueue) forget(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.open, id)
}

// check refuses a second settlement of a reservation whose first one is
// queued.
func (q *settleQueue) check(id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if tr := q.open[id]; tr != nil && tr.settled {
		return fault.Wrap(fault.NotFound, ErrSettled, "budget: reservation %s is not open (unknown or already settled)", id)
	}
	return nil
}

// queue defers the settlement of id to used bytes. It reports false for a
// reservation it does not remember (the caller writes the settlement
// itself) and refuses what the write would refuse.
func (q *settleQueue) queue(id string, used int64) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	tr := q.open[id]
	switch {
	case tr == nil || q.closed:
		return false, nil
	case tr.settled:
		return true, fault.Wrap(fault.NotFound, ErrSettled, "budget: reservation %s is not open (unknown or already settled)", id)
	case used > tr.bytes:
		return true, fault.New(fault.InvalidInput, "budget: settlement of %d bytes for reservation %s is more than the %d reserved; the charge stays", used, id, tr.bytes)
	}
	tr.settled = true
	q.pending = append(q.pending, pendingSettle{id: id, used: used})
	if !q.scheduled && q.flush != nil {
		q.scheduled = true
		time.AfterFunc(q.delay, q.flush)
	}
	return true, nil
}

// take removes up to max queued settlements (all when max is 0) for a
// transaction to write.
func (q *settleQueue) take(max int) []pendingSettle {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.pending)
	if max > 0 {
		n = min(n, max)
	}
	if n == 0 {
		return nil
	}
	ps := q.pending[:n:n]
	q.pending = q.pending[n:]
	return ps
}

// requeue puts back settlements whose transaction failed.
func (q *settleQueue) requeue(ps []pendingSettle) {
	if len(ps) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(ps, q.pending...)
	if !q.scheduled && q.flush != nil {
		q.scheduled = true
		time.AfterFunc(q.delay, q.flush)
	}
}

// written records that ps were committed; matched are those that found
// their reservation open. A matched settlement under a lease gives its
// unused bytes back to the lease: the durable charge is now what was used.
func (q *settleQueue) written(ps []pendingSettle, matched map[string]bool) {
	if len(ps) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, p := range ps {
		tr := q.open[p.id]
		delete(q.open, p.id)
		if tr != nil && tr.l != nil && matched[p.id] {
			tr.l.credit(tr.bytes - p.used)
		}
	}
}

// drop forgets queued settlements that will not be written: their
// reservations stay charged.
func (q *settleQueue) drop() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, p := range q.pending {
		delete(q.open, p.id)
	}
	n := len(q.pending)
	q.pending = nil
	return n
}

// due clears the schedule and reports whether settlements wait.
func (q *settleQueue) due() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.scheduled = false
	return len(q.pending) > 0 && !q.closed
}

func (q *settleQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
}

// settleSQL is the statement writing n settlements: each finds its
// reservation open and reserving at least what was used, or changes
// nothing; it returns the ids it settled.
func settleSQL(n int) string {
	var b strings.Builder
	b.WriteString(`WITH v(id, used) AS (VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, CAST(? AS BIGINT))")
	}
	b.WriteString(`) UPDATE budget_reservation SET used = v.used FROM v
		WHERE budget_reservation.id = v.id AND budget_reservation.used IS NULL AND budget_reservation.bytes >= v.used
		RETURNING budget_reservation.id`)
	return b.String()
}

func settleArgs(ps []pendingSettle) []any {
	args := make([]any, 0, 2*len(ps))
	for _, p := range ps {
		args = append(args, p.id, p.used)
	}
	return args
}

// writeSettles writes ps in t, chunk by chunk, and returns those that
// found their reservation open.
func (s *store) writeSettles(ctx context.Context, t *sql.Tx, ps []pendingSettle) (map[string]bool, error) {
	matched := make(map[string]bool, len(ps))
	for chunk := range slices.Chunk(ps, limits.BudgetMaxBatch) {
		rows, err := t.QueryContext(ctx, s.settleStmts.get(s.d, len(chunk), settleSQL), settleArgs(chunk)...)
		if err != nil {
			return nil, err
		}
		if err := scanIDs(rows, matched); err != nil {
			return nil, err
		}
	}
	return matched, nil
}

// scanIDs adds the ids rows return to into, and closes rows.
func scanIDs(rows *sql.Rows, into map[string]bool) error {
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		into[id] = true
	}
	return rows.Err()
}
