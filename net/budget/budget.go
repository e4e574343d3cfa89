// Package budget admits requests against a reviewed, durable allowance
// shared by every process (and, with PostgreSQL, every host) that opens the
// same root: reserve before any I/O, settle after, status for operators.
//
// Admission through the group row is one transaction that reads the
// group's counters, checks the window allowance, the task's share, the
// minimum spacing and any cooldown, charges the reservation and commits
// durably before it returns, so the bytes are counted before the first one
// is sent. A reservation whose outcome is never settled (a crash, a
// timeout mid-body) stays charged in full; Settle can only lower a charge
// to what was really used.
//
// Stores: SQLite (modernc.org/sqlite, WAL, synchronous=FULL, one root
// directory per allowance; the database write lock serialises admissions
// across processes) and PostgreSQL (github.com/jackc/pgx/v5; the group row
// is locked FOR UPDATE, so admissions from many hosts serialise on it).
//
// Leases (PostgreSQL, when the policy sets no minimum spacing and no task
// share narrower than the group's, and Options.NoLease is not set): a
// Budget's admission through the group row also takes a slice of what the
// window has left (lease.go) and charges all of it to the group at once;
// later admissions of that Budget are served from the slice, each durably
// inserting its reservation row under the lease (many in one statement)
// without the group row, so hosts no longer wait for each other's commits.
//
// Conservation. Let used be the group row's window counters. With leases,
// used counts every slice in full from its grant until it is returned, so
// used ≤ policy (checked under the group row lock, for slices as for
// single admissions) bounds the reservations made through the group row
// plus all slices. Within a slice, the holder admits only while its own
// count (the slice less its reservations, plus the unused bytes of
// settlements already written) covers the request, so a slice's durable
// rows never charge more than the slice. Taking a slice back locks its
// lease row for update: that waits for every admission statement that
// holds the key-share lock on it and makes every later one insert nothing,
// so the rows it then counts are all the slice will ever have, and only
// the slice less their charges goes back to used. Hence at every instant
// admitted(window) ≤ used ≤ policy, on every host. A request the
// unleased allowance cannot serve takes every lease back first, so a
// refusal for the window allowance is exact, as without leases. The
// statement under a lease also reads the group row (without locking it)
// and inserts only while the root is active, the lease's window is
// current and no cooldown or spacing deadline is pending at the admitting
// host's clock: a cooldown committed before the statement stops it.
// Clocks decide when a lease is taken back (expiry), never whether an
// admission under it counts.
//
// Deferred settlements (deferred.go): Settle of a reservation this Budget
// admitted, without an upstream refusal, returns once it is checked and
// queued; it is written within Options.SettleDelay, by the next batch or
// by Flush or Close. A settlement lost before it is written (a crash)
// leaves the reservation charged in full, as an unknown outcome is.
//
// Deadlines (window end, spacing, cooldown) are stored on the wall clock
// and on the boot clock with the boot's identity; a deadline is reached
// only when both have passed it, so neither a restart nor a wall-clock jump
// shortens a wait (see Instant). Changing a policy never resets counters:
// the new allowance applies to what was already charged.
package budget

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Options configure Open. Nil options are the defaults.
type Options struct {
	// Clock reads the time; nil is SystemClock.
	Clock Clock
	// NoLease admits every request through the group row, also where a
	// lease could serve it (PostgreSQL): for a host that wants no slice
	// of the allowance set aside for it.
	NoLease bool
	// SettleDelay is how long a deferred settlement waits for another
	// transaction to ride on; zero is limits.BudgetSettleDelay.
	SettleDelay time.Duration
	// Log receives what cannot be returned to a caller: deferred
	// settlements that failed to be written (dropped: their reservations
	// stay charged), and admissions past limits.BudgetMaxTracked
	// remembered reservations (their settlements are not deferred). Nil
	// is slog.Default().
	Log *slog.Logger
}

// Budget is an open allowance. It is safe for concurrent use.
type Budget struct {
	s      *store
	policy Policy
	clock  Clock
	log    *slog.Logger
	// holder names this Budget's leases.
	holder string
	// leasable: the policy can be served by leases (other hosts' leases
	// may stand while it admits); leasing: this Budget takes them too
	// (see lease.go).
	leasable, leasing bool
	lmu               sync.Mutex
	lease             *lease
}

// Sentinel causes, for errors.Is.
var (
	// ErrTransferred marks a root whose allowance moved to another root
	// (or is being moved: a snapshot sealed it).
	ErrTransferred = fault.NewMark("budget root was transferred")
	// ErrSettled marks a second settlement of one reservation.
	ErrSettled = fault.NewMark("reservation is not open")
)

// Open opens (creating when missing) the budget root or PostgreSQL store
// at locator for policy's group. A root that holds another group is a
// conflict. The policy is recorded for status; counters are never reset.
func Open(ctx context.Context, locator string, policy *Policy, opts *Options) (*Budget, error) {
	if policy == nil {
		return nil, fault.New(fault.InvalidInput, "budget: a policy is required")
	}
	if err := policy.check(); err != nil {
		return nil, err
	}
	s, err := openStore(ctx, locator, true)
	if err != nil {
		return nil, err
	}
	b, err := newBudget(s, *policy, opts)
	if err != nil {
		s.db.Close()
		return nil, err
	}
	if err := s.tx(ctx, func(t *sql.Tx) error { return b.init(ctx, t) }); err != nil {
		s.db.Close()
		return nil, err
	}
	return b, nil
}

// OpenExisting opens a budget that exists, with the policy it recorded.
func OpenExisting(ctx context.Context, locator string, opts *Options) (*Budget, error) {
	s, err := openStore(ctx, locator, false)
	if err != nil {
		return nil, err
	}
	p, err := s.recordedPolicy(ctx)
	if err != nil {
		s.db.Close()
		return nil, err
	}
	b, err := newBudget(s, *p, opts)
	if err != nil {
		s.db.Close()
		return nil, err
	}
	return b, nil
}

func newBudget(s *store, p Policy, opts *Options) (*Budget, error) {
	holder, err := newID()
	if err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &Options{}
	}
	b := &Budget{s: s, policy: p, clock: SystemClock, log: slog.Default(), holder: holder}
	if opts.Clock != nil {
		b.clock = opts.Clock
	}
	if opts.Log != nil {
		b.log = opts.Log
	}
	b.leasable = s.d == postgresDialect && p.MinIntervalSeconds == 0 &&
		p.TaskRequests == p.WindowRequests && p.TaskBytes == p.WindowBytes
	b.leasing = b.leasable && !opts.NoLease
	s.b = b
	s.q = newSettleQueue(opts.SettleDelay)
	s.q.flush = b.flushDue
	s.q.warn = b.warnUntracked
	return b, nil
}

// warnUntracked tells the host that admissions are no longer remembered
// for deferred settlement: as many reservations as the bound wait for
// their settlement (most likely some are never settled), so the
// settlements of the ones admitted since are written before Settle
// returns, one transaction each.
func (b *Budget) warnUntracked(untracked int64) {
	b.log.Warn("budget: this process remembers as many unsettled reservations as it may; settlements of the ones admitted since are written before Settle returns, not deferred (reservations never settled stay charged, and remembered while this budget is open)",
		"root", b.s.locator, "remembered", limits.BudgetMaxTracked, "not_remembered", untracked)
}

// Flush writes the settlements deferred so far. If it fails, they stay
// queued (and their reservations charged).
func (b *Budget) Flush(ctx context.Context) error {
	return b.s.enqueue(ctx, &b.s.freeB, &op{fn: func(context.Context, *batchState) error { return nil }, flush: true, done: make(chan error, 1)})
}

// flushDue writes the deferred settlements that found no transaction to
// ride on. If that fails, they are dropped: their reservations stay
// charged in full, as status shows.
func (b *Budget) flushDue() {
	if !b.s.q.due() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), limits.BudgetBusyTimeout)
	defer cancel()
	if err := b.Flush(ctx); err != nil {
		if n := b.s.q.drop(); n > 0 {
			b.log.Warn("budget: deferred settlements could not be written; their reservations stay charged in full", "root", b.s.locator, "settlements", n, "err", err)
		}
	}
}

// Close writes the deferred settlements, returns this Budget's lease
// and releases the store. Settlements it cannot write leave their
// reservations charged (the error says so); a lease it cannot return is
// taken back when it expires.
func (b *Budget) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), limits.BudgetBusyTimeout)
	defer cancel()
	err := b.Flush(ctx)
	if err != nil {
		err = fault.Wrap(fault.As(err).Code, err, "budget: %d deferred settlements were not written; their reservations stay charged", b.s.q.drop())
	}
	if b.currentLease() != nil {
		if lerr := b.s.locked(ctx, "", func(ctx context.Context, bs *batchState) error {
			return bs.returnLeases(ctx, func(l *leaseRow) bool { return l.holder == b.holder })
		}); err == nil {
			err = lerr
		}
		b.setLease(nil)
	}
	b.s.q.close()
	if cerr := b.s.db.Close(); err == nil && cerr != nil {
		err = fault.Wrap(fault.IO, cerr, "budget store %s: close failed", b.s.locator)
	}
	return err
}

// Policy returns the policy admissions are checked against.
func (b *Budget) Policy() Policy { return b.policy }

// Locator is the root directory or the PostgreSQL URL without password.
func (b *Budget) Locator() string { return b.s.locator }

// init creates the schema and the group row when missing, checks the
// group and records the policy.
func (b *Budget) init(ctx context.Context, t *sql.Tx) error {
	s := b.s
	if s.d == postgresDialect {
		// Concurrent CREATE TABLE IF NOT EXISTS can collide in PostgreSQL.
		if err := s.exec(ctx, t, `SELECT pg_advisory_xact_lock(7478193)`); err != nil {
			return err
		}
	}
	for _, q := range schema {
		if err := s.exec(ctx, t, q); err != nil {
			return err
		}
	}
	if err := s.upgrade(ctx, t); err != nil {
		return err
	}
	var group string
	err := s.queryRow(ctx, t, `SELECT v FROM budget_meta WHERE k = 'group'`).Scan(&group)
	switch {
	case err == sql.ErrNoRows:
		if err := b.create(ctx, t, nil); err != nil {
			return err
		}
	case err != nil:
		return err
	case group != b.policy.Group:
		return fault.New(fault.Conflict, "budget root %s holds group %q, not %q", s.locator, group, b.policy.Group)
	}
	return b.recordPolicy(ctx, t)
}

// create writes the meta rows and the group row: g, or a fresh window.
func (b *Budget) create(ctx context.Context, t *sql.Tx, g *GroupState) error {
	if g == nil {
		now := b.clock()
		g = &GroupState{WindowSeq: 1, WindowStart: now.Wall.UnixNano(), WindowEnd: after(now, b.policy.window()), State: stateActive}
	}
	for _, kv := range [][2]string{{"format", "1"}, {"group", b.policy.Group}} {
		if err := b.s.exec(ctx, t, `INSERT INTO budget_meta (k, v) VALUES (?, ?)`, kv[0], kv[1]); err != nil {
			return err
		}
	}
	return b.s.insertGroup(ctx, t, g)
}

func (b *Budget) recordPolicy(ctx context.Context, t *sql.Tx) error {
	data, err := json.Marshal(b.policy)
	if err != nil {
		return err
	}
	return b.s.exec(ctx, t, `INSERT INTO budget_meta (k, v) VALUES ('policy', ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, string(data))
}

func (s *store) recordedPolicy(ctx context.Context) (*Policy, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT v FROM budget_meta WHERE k = 'policy'`).Scan(&v)
	if err != nil {
		if s.d == postgresDialect || err == sql.ErrNoRows {
			return nil, fault.Wrap(fault.NotFound, err, "budget store %s holds no budget", s.locator)
		}
		return nil, s.classify(err)
	}
	var p Policy
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return nil, fault.Wrap(fault.Integrity, err, "budget store %s: recorded policy is unreadable", s.locator)
	}
	return &p, nil
}

// Reservation is an admitted request whose bytes are charged until it is
// settled.
type Reservation struct {
	ID    string `json:"id"`
	Group string `json:"group"`
	Task  string `json:"task"`
	Bytes int64  `json:"bytes"`
	// due is the request's deadline (the reserving context's), by which
	// it is expected to be settled; unset without one.
	due deadline
}

// Reserve admits one request of at most bytes for task, or fails: deferred
// with the interval to wait (spacing, cooldown, window allowance), limit
// when bytes can never fit a window, denied when the root was
// transferred. The charge is durable when Reserve returns.
//
// ctx's deadline, if it has one, is the request's: the reservation is in
// flight until then. A request deferred because reservations in flight
// hold the bytes it needs is told so, and to retry once they are due to
// be settled rather than at the window's end.
func (b *Budget) Reserve(ctx context.Context, task string, bytes int64) (*Reservation, error) {
	if err := checkName("budget task", task); err != nil {
		return nil, err
	}
	if bytes < 0 || bytes > b.policy.TaskBytes {
		return nil, fault.New(fault.Limit, "budget: a reservation of %d bytes can never fit the allowance of %d bytes per task and window", bytes, b.policy.TaskBytes)
	}
	return b.reserve(ctx, task, bytes, false)
}

// ReserveUpTo admits one request like Reserve, reserving max bytes or, if
// less is left of the group's or the task's window allowance, all that is
// left (at least one byte). The reservation's Bytes is what the request
// may bring.
func (b *Budget) ReserveUpTo(ctx context.Context, task string, max int64) (*Reservation, error) {
	if err := checkName("budget task", task); err != nil {
		return nil, err
	}
	if max < 1 {
		return nil, fault.New(fault.InvalidInput, "budget: a reservation of up to %d bytes", max)
	}
	return b.reserve(ctx, task, min(max, b.policy.TaskBytes), true)
}

func (b *Budget) reserve(ctx context.Context, task string, bytes int64, upTo bool) (*Reservation, error) {
	id, err := newID()
	if err != nil {
		return nil, err
	}
	r := &Reservation{ID: id, Group: b.policy.Group, Task: task, Bytes: bytes}
	if dl, ok := ctx.Deadline(); ok {
		r.due = after(b.clock(), time.Until(dl))
	}
	if b.leasing {
		ok, err := b.reserveLeased(ctx, r)
		if err != nil {
			return nil, err
		}
		if ok {
			return r, nil
		}
	}
	err = b.s.locked(ctx, task, func(ctx context.Context, bs *batchState) error { return b.admit(ctx, bs, r, upTo) })
	if err != nil {
		return nil, err
	}
	b.s.q.track(r.ID, r.Bytes, nil)
	return r, nil
}

func (b *Budget) admit(ctx context.Context, bs *batchState, r *Reservation, upTo bool) error {
	g := bs.g
	now := b.clock()
	if err := b.admissible(g, now); err != nil {
		return err
	}
	// Exactly as without leases: a request the unleased allowance cannot
	// serve in full takes every lease's unused part back first.
	if len(bs.leases) > 0 && (g.WindowRequests+1 > b.policy.WindowRequests || g.WindowBytes+r.Bytes > b.policy.WindowBytes) {
		if err := bs.returnLeases(ctx, allLeases); err != nil {
			return err
		}
	}
	ts, err := bs.task(ctx, r.Task)
	if err != nil {
		return err
	}
	if ts.WindowSeq != g.WindowSeq {
		ts.WindowSeq, ts.WindowRequests, ts.WindowBytes = g.WindowSeq, 0, 0
	}
	if upTo {
		left := min(b.policy.WindowBytes-g.WindowBytes, b.policy.TaskBytes-ts.WindowBytes)
		r.Bytes = max(min(r.Bytes, left), 1)
	}
	if err := b.fits(ctx, bs, ts, r.Bytes, now); err != nil {
		return err
	}
	bs.inserts = append(bs.inserts, newReservation{id: r.ID, task: r.Task, bytes: r.Bytes, seq: g.WindowSeq, created: now.Wall.UnixNano(), due: r.due})
	g.WindowRequests++
	g.WindowBytes += r.Bytes
	g.TotalRequests++
	g.TotalBytes += r.Bytes
	ts.WindowRequests++
	ts.WindowBytes += r.Bytes
	ts.TotalRequests++
	ts.TotalBytes += r.Bytes
	bs.touch(ts)
	if iv := b.policy.interval(); iv > 0 {
		g.Next = after(now, iv)
	}
	return bs.grant(ctx, b, r, now)
}

// admissible checks the root's state, the cooldown and the spacing, and
// starts a new window when the current one has ended.
func (b *Budget) admissible(g *GroupState, now Instant) error {
	switch g.State {
	case stateSealed:
		return fault.Wrap(fault.Denied, ErrTransferred, "budget root %s is sealed by quota snapshot %s; admissions continue at the root it is transferred to", b.s.locator, g.SnapshotID)
	case stateTransferred:
		return fault.Wrap(fault.Denied, ErrTransferred, "budget root %s was transferred to %s; use that root", b.s.locator, g.TransferredTo)
	}
	if g.CooldownOperator {
		return fault.New(fault.Deferred, "budget group %q is blocked until an operator clears its cooldown (%s); see capkit budget status", b.policy.Group, g.CooldownReason)
	}
	if d := g.Cooldown.remaining(now); d > 0 {
		return deferred(d, "budget group %q is cooling down after an upstream refusal (%s)", b.policy.Group, g.CooldownReason)
	}
	if d := g.Next.remaining(now); d > 0 {
		return deferred(d, "budget group %q admits one request every %ds", b.policy.Group, b.policy.MinIntervalSeconds)
	}
	if g.WindowEnd.remaining(now) == 0 {
		g.WindowSeq++
		g.WindowStart = now.Wall.UnixNano()
		g.WindowEnd = after(now, b.policy.window())
		g.WindowRequests, g.WindowBytes = 0, 0
	}
	return nil
}

// fits checks the group's and the task's window allowance. Requests come
// back only with the window; bytes also when reservations in flight are
// settled (bytesDeferred says when).
func (b *Budget) fits(ctx context.Context, bs *batchState, ts *TaskState, bytes int64, now Instant) error {
	p, g := &b.policy, bs.g
	wait := g.WindowEnd.remaining(now)
	switch {
	case g.WindowRequests+1 > p.WindowRequests:
		return deferred(wait, "budget group %q has used its %d requests of this window", p.Group, p.WindowRequests)
	case g.WindowBytes+bytes > p.WindowBytes:
		left := p.WindowBytes - g.WindowBytes
		return bs.bytesDeferred(ctx, "", bytes-left, wait, now, "budget group %q has %d of its %d bytes left in this window; %d asked", p.Group, left, p.WindowBytes, bytes)
	case ts.WindowRequests+1 > p.TaskRequests:
		return deferred(wait, "budget task %q has used its %d requests of this window", ts.Task, p.TaskRequests)
	case ts.WindowBytes+bytes > p.TaskBytes:
		left := p.TaskBytes - ts.WindowBytes
		return bs.bytesDeferred(ctx, ts.Task, bytes-left, wait, now, "budget task %q has %d of its %d bytes left in this window; %d asked", ts.Task, left, p.TaskBytes, bytes)
	}
	return nil
}

// deferred is a wait of whole seconds, rounded up, with the interval in
// the message too.
func deferred(wait time.Duration, format string, args ...any) *fault.Error {
	d := max((wait + time.Second - 1).Truncate(time.Second), time.Second)
	return fault.New(fault.Deferred, "%s; retry in %s", fmt.Sprintf(format, args...), d).RetryIn(d)
}

// newID is 8 bytes of the wall clock and 8 random ones, in hex: unique,
// and inserted near the ones before it (an index grows at one end).
func newID() (string, error) {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixNano()))
	if _, err := rand.Read(b[8:]); err != nil {
		return "", fault.Wrap(fault.Internal, err, "budget: no randomness for a reservation id")
	}
	return hex.EncodeToString(b[:]), nil
}
