package budget

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Leases (PostgreSQL). A Budget takes a slice of the window's allowance
// (some requests and bytes) in a transaction holding the group row, and
// charges the slice to the group then and there. It then admits from the
// slice without the group row: admissions are inserted as reservation
// rows naming the lease, by one statement per batch that joins the lease
// row and takes a key-share lock on it. Taking a lease back (its holder
// closes or replaces it, it expires, the window ends, or a transaction
// holding the group row needs its unused part) locks the lease row for
// update, which waits for every statement holding the key-share lock, and
// deletes it, so that every later statement finds no lease row and
// inserts nothing: the lease's rows it then counts are final, and the
// slice less their charges goes back to the group. See the package
// comment for the conservation argument.

// lease is the slice a Budget admits from: what is left of it as this
// process counts (never more than its durable rows leave).
type lease struct {
	mu        sync.Mutex
	id        string
	seq       int64
	windowEnd deadline
	expires   deadline
	requests  int64
	bytes     int64
	dead      bool
}

// take charges one request of bytes to l, if l can still serve it at now.
func (l *lease) take(bytes int64, now Instant) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.usable(bytes, now) {
		return false
	}
	l.requests--
	l.bytes -= bytes
	return true
}

// serves reports whether l could serve one more request of bytes at now.
func (l *lease) serves(bytes int64, now Instant) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.usable(bytes, now)
}

func (l *lease) usable(bytes int64, now Instant) bool {
	return !l.dead && l.requests >= 1 && l.bytes >= bytes && l.expires.remaining(now) > 0 && l.windowEnd.remaining(now) > 0
}

// giveBack undoes a take whose statement inserted nothing.
func (l *lease) giveBack(bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests++
	l.bytes += bytes
}

// credit returns settled bytes to l.
func (l *lease) credit(bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bytes += bytes
}

func (l *lease) kill() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dead = true
}

func (b *Budget) currentLease() *lease {
	b.lmu.Lock()
	defer b.lmu.Unlock()
	return b.lease
}

// setLease makes l the lease admissions are served from and returns the
// one it replaces, if any.
func (b *Budget) setLease(l *lease) *lease {
	b.lmu.Lock()
	defer b.lmu.Unlock()
	old := b.lease
	if old != nil {
		old.kill()
	}
	b.lease = l
	return old
}

// returnLater takes back a replaced lease in a transaction of its own,
// so that admissions under its successor do not wait for it. If that
// fails, the lease is taken back when it expires or by the next
// transaction that holds the group row for this Budget.
func (b *Budget) returnLater(old *lease) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), limits.BudgetBusyTimeout)
		defer cancel()
		b.s.locked(ctx, "", func(ctx context.Context, bs *batchState) error {
			return bs.returnLeases(ctx, func(l *leaseRow) bool { return l.id == old.id })
		})
	}()
}

// errRefused is an admission under a lease that inserted nothing: the
// lease was taken back, or the group row refused it (a cooldown, spacing,
// a new window, a seal) and the locked path says why.
var errRefused = errors.New("budget: refused under the lease")

// admission is one reservation to insert under a lease.
type admission struct {
	r *Reservation
	l *lease
}

// reserveLeased admits r under this Budget's lease, if it has one that
// can serve r; false sends r to the locked path, which decides exactly.
// Admissions under a lease from one process share statements (batches
// without the group row).
func (b *Budget) reserveLeased(ctx context.Context, r *Reservation) (bool, error) {
	for range 3 {
		l := b.currentLease()
		if l == nil || !l.take(r.Bytes, b.clock()) {
			return false, nil
		}
		err := b.s.enqueue(ctx, &b.s.leaseB, &op{adm: &admission{r: r, l: l}, done: make(chan error, 1)})
		switch {
		case err == nil:
			b.s.q.track(r.ID, r.Bytes, l)
			return true, nil
		case errors.Is(err, errRefused):
			l.giveBack(r.Bytes)
			if b.currentLease() == l {
				return false, nil
			}
			// Refused because l was replaced while the statement ran.
		default:
			// The outcome may be unknown: the slice is not counted on
			// again.
			l.kill()
			return false, err
		}
	}
	return false, nil
}

// commitLeased inserts a batch of admissions under leases in one
// statement and tells each its outcome.
func (s *store) commitLeased(ops []*op) {
	ctx, cancel := context.WithTimeout(context.Background(), limits.BudgetBusyTimeout)
	defer cancel()
	now := s.b.clock()
	args := make([]any, 0, 9*len(ops)+6)
	for _, o := range ops {
		r, l := o.adm.r, o.adm.l
		args = append(args, r.ID, r.Task, r.Bytes, now.Wall.UnixNano(), l.id, l.seq, r.due.Wall, r.due.BootID, r.due.Boot)
	}
	for range 2 {
		args = append(args, now.Wall.UnixNano(), now.BootID, int64(now.Boot))
	}
	inserted := map[string]bool{}
	rows, err := s.db.QueryContext(ctx, s.leaseStmts.get(s.d, len(ops), leaseSQL), args...)
	if err == nil {
		err = scanIDs(rows, inserted)
	}
	err = s.classify(err)
	for _, o := range ops {
		switch {
		case err != nil:
			o.done <- err
		case inserted[o.adm.r.ID]:
			o.done <- nil
		default:
			o.done <- errRefused
		}
	}
}

// leaseSQL is the admission of n reservations under leases: it inserts
// those whose lease is of the group's current window, and only while the
// group row (read, not locked) is active and neither cooling down nor
// spacing requests at the admitting host's clock; it returns their ids.
func leaseSQL(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO budget_reservation (id, task, bytes, win_seq, created, lease, due_wall, due_boot_id, due_boot)
	SELECT v.id, v.task, v.bytes, g.win_seq, v.created, v.lease, v.due_wall, v.due_boot_id, v.due_boot FROM (VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, CAST(? AS BIGINT), CAST(? AS BIGINT), ?, CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS BIGINT))")
	}
	b.WriteString(`) AS v (id, task, bytes, created, lease, seq, due_wall, due_boot_id, due_boot)
	JOIN budget_group g ON g.id = 1 AND g.win_seq = v.seq
	JOIN budget_lease l ON l.id = v.lease
	WHERE g.state = 'active' AND g.cool_operator = 0 AND ` + reachedSQL("g.cool") + ` AND ` + reachedSQL("g.next") + `
	FOR KEY SHARE OF l
	RETURNING id`)
	return b.String()
}

// reachedSQL is deadline.remaining == 0 for the deadline columns prefix_*,
// given now's wall, boot identity and boot reading.
func reachedSQL(prefix string) string {
	return prefix + "_wall <= CAST(? AS BIGINT) AND (" + prefix + "_boot_id = '' OR " + prefix + "_boot_id <> ? OR " + prefix + "_boot <= CAST(? AS BIGINT))"
}

// leaseRow is a lease as stored.
type leaseRow struct {
	id, holder           string
	seq, requests, bytes int64
	expires              deadline
}

// loadLeases reads the outstanding leases (PostgreSQL only; the group row
// is held, so no lease is granted or taken back meanwhile).
func (bs *batchState) loadLeases(ctx context.Context) error {
	rows, err := bs.t.QueryContext(ctx, `SELECT id, holder, win_seq, requests, bytes, exp_wall, exp_boot_id, exp_boot FROM budget_lease`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var l leaseRow
		if err := rows.Scan(&l.id, &l.holder, &l.seq, &l.requests, &l.bytes, &l.expires.Wall, &l.expires.BootID, &l.expires.Boot); err != nil {
			return err
		}
		bs.leases = append(bs.leases, &l)
	}
	return rows.Err()
}

func allLeases(*leaseRow) bool { return true }

// holds reports whether lease id is outstanding in this batch.
func (bs *batchState) holds(id string) bool {
	for _, l := range bs.leases {
		if l.id == id {
			return true
		}
	}
	return false
}

// returnLeases takes back the leases pick selects: it waits for their
// admissions in flight and fences off later ones, counts their
// reservation rows into the task counters, returns the unused part of
// each slice to the group, folds in (deletes) the settled rows and leaves
// the open ones charged, outside any lease.
func (bs *batchState) returnLeases(ctx context.Context, pick func(*leaseRow) bool) error {
	var back []*leaseRow
	keep := bs.leases[:0]
	for _, l := range bs.leases {
		if pick(l) {
			back = append(back, l)
		} else {
			keep = append(keep, l)
		}
	}
	bs.leases = keep
	if len(back) == 0 {
		return nil
	}
	ids := make([]any, len(back))
	for i, l := range back {
		ids[i] = l.id
		if bs.granted != nil && bs.granted.id == l.id {
			bs.granted = nil // granted and taken back in one batch: not installed
		}
	}
	in := ` IN (?` + repeatArgs(len(ids)-1) + `)`
	if err := bs.s.exec(ctx, bs.t, `SELECT id FROM budget_lease WHERE id`+in+` FOR UPDATE`, ids...); err != nil {
		return err
	}
	var admitted []leasedRow
	var done []settled
	for _, l := range back {
		rows, err := bs.t.QueryContext(ctx, bs.s.d.rebind(`DELETE FROM budget_reservation WHERE lease = ? AND used IS NOT NULL RETURNING task, bytes, used, win_seq`), l.id)
		if err != nil {
			return err
		}
		first := len(done)
		if done, err = scanSettled(rows, done); err != nil {
			return err
		}
		for _, r := range done[first:] {
			admitted = append(admitted, leasedRow{lease: l.id, task: r.task, bytes: r.reserved, charge: r.used, seq: r.wseq})
		}
		// The open ones stay, charged in full, outside the lease.
		rows, err = bs.t.QueryContext(ctx, bs.s.d.rebind(`UPDATE budget_reservation SET lease = NULL WHERE lease = ? RETURNING task, bytes, win_seq`), l.id)
		if err != nil {
			return err
		}
		if admitted, err = scanLeaseRows(rows, l.id, admitted); err != nil {
			return err
		}
	}
	if err := bs.s.exec(ctx, bs.t, `DELETE FROM budget_lease WHERE id`+in, ids...); err != nil {
		return err
	}
	if err := bs.countLeased(ctx, back, admitted); err != nil {
		return err
	}
	bs.refund(done)
	return nil
}

// leasedRow is a reservation admitted under a lease being returned:
// bytes it reserved, and its charge (what it used once settled, else what
// it reserved), which is what the lease's slice bounds (a refund credited
// to the lease lets it admit again).
type leasedRow struct {
	lease, task        string
	bytes, charge, seq int64
}

// scanLeaseRows appends the rows (task, bytes, win_seq) of lease id to
// out, and closes rows.
func scanLeaseRows(rows *sql.Rows, id string, out []leasedRow) ([]leasedRow, error) {
	defer rows.Close()
	for rows.Next() {
		r := leasedRow{lease: id}
		if err := rows.Scan(&r.task, &r.bytes, &r.seq); err != nil {
			return nil, err
		}
		r.charge = r.bytes
		out = append(out, r)
	}
	return out, rows.Err()
}

// countLeased moves returned leases' accounting into the counters: each
// row is a request of its task, and the slice's unused part leaves the
// group's window (if still current) and totals.
func (bs *batchState) countLeased(ctx context.Context, back []*leaseRow, admitted []leasedRow) error {
	names := make([]string, len(admitted))
	for i, r := range admitted {
		names[i] = r.task
	}
	if err := bs.need(ctx, names); err != nil {
		return err
	}
	used := map[string][3]int64{} // requests, reserved bytes, charged bytes
	for _, r := range admitted {
		u := used[r.lease]
		used[r.lease] = [3]int64{u[0] + 1, u[1] + r.bytes, u[2] + r.charge}
		ts := bs.tasks[r.task]
		if ts.WindowSeq < r.seq {
			ts.WindowSeq, ts.WindowRequests, ts.WindowBytes = r.seq, 0, 0
		}
		if ts.WindowSeq == r.seq {
			ts.WindowRequests++
			ts.WindowBytes += r.bytes
		}
		ts.TotalRequests++
		ts.TotalBytes += r.bytes
		bs.touch(ts)
	}
	g := bs.g
	for _, l := range back {
		u := used[l.id]
		if u[0] > l.requests || u[2] > l.bytes {
			return fault.New(fault.Integrity, "budget store %s: lease %s admitted %d requests and charged %d bytes of its %d and %d", bs.s.locator, l.id, u[0], u[2], l.requests, l.bytes)
		}
		req, by := l.requests-u[0], l.bytes-u[1]
		if l.seq == g.WindowSeq {
			g.WindowRequests -= req
			g.WindowBytes -= by
		}
		g.TotalRequests -= req
		g.TotalBytes -= by
	}
	return nil
}

// grant gives this batch's Budget a new lease, unless its current one can
// still serve: half of what the window has left, at most
// limits.BudgetLeaseMaxRequests requests and that many times r's bytes.
// It grants nothing when that would not serve one more request like r.
func (bs *batchState) grant(ctx context.Context, b *Budget, r *Reservation, now Instant) error {
	if !b.leasing || bs.granted != nil {
		return nil
	}
	cur := b.currentLease()
	if cur != nil && cur.serves(r.Bytes, now) && bs.holds(cur.id) {
		return nil // the caller came here first, or for a refusal
	}
	// Own leases but the current one (returned once its successor is in
	// place) are left over from failures.
	if err := bs.returnLeases(ctx, func(l *leaseRow) bool { return l.holder == b.holder && (cur == nil || l.id != cur.id) }); err != nil {
		return err
	}
	p, g := &b.policy, bs.g
	n := min(limits.BudgetLeaseMaxRequests, (p.WindowRequests-g.WindowRequests)/2)
	nb := min(n*r.Bytes, (p.WindowBytes-g.WindowBytes)/2)
	if n < 1 || nb < r.Bytes {
		return nil
	}
	id, err := newID()
	if err != nil {
		return err
	}
	l := &lease{id: id, seq: g.WindowSeq, windowEnd: g.WindowEnd, expires: after(now, limits.BudgetLeaseTTL), requests: n, bytes: nb}
	err = bs.s.exec(ctx, bs.t, `INSERT INTO budget_lease (id, holder, win_seq, requests, bytes, created, exp_wall, exp_boot_id, exp_boot) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, b.holder, l.seq, n, nb, now.Wall.UnixNano(), l.expires.Wall, l.expires.BootID, l.expires.Boot)
	if err != nil {
		return err
	}
	g.WindowRequests += n
	g.WindowBytes += nb
	g.TotalRequests += n
	g.TotalBytes += nb
	bs.leases = append(bs.leases, &leaseRow{id: id, holder: b.holder, seq: l.seq, requests: n, bytes: nb, expires: l.expires})
	bs.granted = l
	return nil
}

// leaseUse is what outstanding leases hold beyond their admissions: set
// aside, not used, in the current window and in all.
type leaseUse struct {
	leases, windowRequests, windowBytes, requests, bytes int64
}

// unusedLeases reads the unused part of every outstanding lease (the
// charge of a row is what it used once settled, else what it reserved).
func (s *store) unusedLeases(ctx context.Context, t *sql.Tx, seq int64) (leaseUse, error) {
	var u leaseUse
	if s.d != postgresDialect {
		return u, nil
	}
	rows, err := t.QueryContext(ctx, `SELECT l.win_seq, l.requests - COUNT(r.id), l.bytes - COALESCE(SUM(COALESCE(r.used, r.bytes)), 0)
		FROM budget_lease l LEFT JOIN budget_reservation r ON r.lease = l.id GROUP BY l.id, l.win_seq, l.requests, l.bytes`)
	if err != nil {
		return u, err
	}
	defer rows.Close()
	for rows.Next() {
		var lseq, req, by int64
		if err := rows.Scan(&lseq, &req, &by); err != nil {
			return u, err
		}
		u.leases++
		u.requests += req
		u.bytes += by
		if lseq == seq {
			u.windowRequests += req
			u.windowBytes += by
		}
	}
	return u, rows.Err()
}
