package budget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/sqlitefault"
	"github.com/capkit/capkit/internal/sqlitepin"
	"github.com/capkit/capkit/limits"
)

// DBFile is the SQLite database inside a budget root directory.
const DBFile = "budget.db"

// dialect is what differs between the two stores; the statements and the
// accounting are shared.
type dialect struct {
	name string
	// forUpdate locks the group row for the admission (PostgreSQL); SQLite
	// instead takes the database write lock at BEGIN (_txlock=immediate).
	forUpdate string
	// numbered placeholders ($1) instead of ?.
	numbered bool
}

var (
	sqliteDialect   = dialect{name: "sqlite"}
	postgresDialect = dialect{name: "postgres", forUpdate: " FOR UPDATE", numbered: true}
)

// rebind rewrites ? placeholders for the dialect.
func (d dialect) rebind(q string) string {
	if !d.numbered {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// sqlCache keeps the rebound text of a statement built for n rows (at
// most limits.BudgetMaxBatch, so at most that many entries): a batch does
// not build and rebind it again.
type sqlCache struct {
	mu sync.Mutex
	m  map[int]string
}

func (c *sqlCache) get(d dialect, n int, build func(n int) string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	q, ok := c.m[n]
	if !ok {
		if c.m == nil {
			c.m = map[int]string{}
		}
		q = d.rebind(build(n))
		c.m[n] = q
	}
	return q
}

// IsPostgres reports whether locator names a PostgreSQL store.
func IsPostgres(locator string) bool {
	return strings.HasPrefix(locator, "postgres://") || strings.HasPrefix(locator, "postgresql://")
}

// store is an open database and its dialect.
type store struct {
	db      *sql.DB
	d       dialect
	locator string // the root path or a URL without its password
	lockedB batcher
	freeB   batcher
	leaseB  batcher
	// leaseSQL and settleSQL of each batch size, rebound.
	leaseStmts, settleStmts sqlCache
	// b is the Budget the store serves, q its deferred settlements.
	b *Budget
	q *settleQueue
}

// openStore opens the database a locator names: a PostgreSQL URL, or a
// root directory holding DBFile. create makes a missing root directory
// (its parent must exist); otherwise a missing root is not_found.
func openStore(ctx context.Context, locator string, create bool) (*store, error) {
	if IsPostgres(locator) {
		return openPostgres(ctx, locator)
	}
	return openSQLite(ctx, locator, create)
}

func openSQLite(ctx context.Context, root string, create bool) (*store, error) {
	if root == "" {
		return nil, fault.New(fault.InvalidInput, "budget root: empty path")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "budget root: bad path %s", root)
	}
	db := filepath.Join(abs, DBFile)
	if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
		if !create {
			return nil, fault.New(fault.NotFound, "budget root %s holds no budget (%s)", root, DBFile)
		}
		if err := os.Mkdir(abs, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fault.Wrap(fault.As(err).Code, err, "budget root %s cannot be created", root)
		}
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", limits.BudgetBusyTimeout/time.Millisecond))
	q.Set("_txlock", "immediate")
	if err := sqlitepin.Ready(); err != nil {
		return nil, err
	}
	sdb, err := sql.Open("sqlite", "file:"+db+"?"+q.Encode())
	if err != nil {
		return nil, fault.Wrap(fault.IO, err, "budget root %s cannot be opened", root)
	}
	// One connection per process: goroutines queue here instead of
	// polling SQLite's busy lock; other processes still wait on the lock.
	sdb.SetMaxOpenConns(1)
	if err := sdb.PingContext(ctx); err != nil {
		sdb.Close()
		return nil, fault.Wrap(fault.IO, err, "budget root %s cannot be opened", root)
	}
	return newStore(sdb, sqliteDialect, abs), nil
}

// RedactURL returns a PostgreSQL URL without its password.
func RedactURL(locator string) (string, error) {
	u, err := url.Parse(locator)
	if err != nil {
		return "", fault.New(fault.InvalidInput, "budget store: not a PostgreSQL URL")
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	return u.String(), nil
}

func openPostgres(ctx context.Context, locator string) (*store, error) {
	redacted, err := RedactURL(locator)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("pgx", locator)
	if err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "budget store: bad PostgreSQL URL")
	}
	// Admissions under a lease run on connections of their own; keep them
	// open between calls, and bound them.
	db.SetMaxOpenConns(limits.BudgetMaxConns)
	db.SetMaxIdleConns(limits.BudgetMaxConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fault.Wrap(fault.Unavailable, err, "budget store: PostgreSQL is unreachable")
	}
	return newStore(db, postgresDialect, redacted), nil
}

func newStore(db *sql.DB, d dialect, locator string) *store {
	s := &store{db: db, d: d, locator: locator}
	s.lockedB.commit = func(ops []*op) { s.commit(ops, true, true) }
	s.freeB.commit = func(ops []*op) { s.commit(ops, false, true) }
	s.leaseB.commit = s.commitLeased
	s.leaseB.secondAt = secondLeaderAt
	return s
}

// schema creates the tables of a budget. Deadlines are stored on both
// clocks (see deadline); counters are 64-bit.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS budget_meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS budget_group (
		id INTEGER PRIMARY KEY,
		win_seq BIGINT NOT NULL, win_start BIGINT NOT NULL,
		win_end_wall BIGINT NOT NULL, win_end_boot_id TEXT NOT NULL, win_end_boot BIGINT NOT NULL,
		win_requests BIGINT NOT NULL, win_bytes BIGINT NOT NULL,
		next_wall BIGINT NOT NULL, next_boot_id TEXT NOT NULL, next_boot BIGINT NOT NULL,
		cool_wall BIGINT NOT NULL, cool_boot_id TEXT NOT NULL, cool_boot BIGINT NOT NULL,
		cool_operator INTEGER NOT NULL, cool_reason TEXT NOT NULL,
		total_requests BIGINT NOT NULL, total_bytes BIGINT NOT NULL,
		state TEXT NOT NULL, snapshot_id TEXT NOT NULL, transferred_to TEXT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS budget_task (task TEXT PRIMARY KEY,
		win_seq BIGINT NOT NULL, win_requests BIGINT NOT NULL, win_bytes BIGINT NOT NULL,
		total_requests BIGINT NOT NULL, total_bytes BIGINT NOT NULL)`,
	// A slice of the window set aside for one holder (lease.go).
	`CREATE TABLE IF NOT EXISTS budget_lease (id TEXT PRIMARY KEY, holder TEXT NOT NULL,
		win_seq BIGINT NOT NULL, requests BIGINT NOT NULL, bytes BIGINT NOT NULL, created BIGINT NOT NULL,
		exp_wall BIGINT NOT NULL, exp_boot_id TEXT NOT NULL, exp_boot BIGINT NOT NULL)`,
	// used is NULL while a reservation is open, then the bytes it used
	// until a locked transaction folds it into the counters; lease names
	// the lease it was admitted under until that lease is returned.
	// due_* is the deadline of the request it admits (zero: none given),
	// by which its settlement is expected.
	`CREATE TABLE IF NOT EXISTS budget_reservation (id TEXT PRIMARY KEY, task TEXT NOT NULL,
		bytes BIGINT NOT NULL, win_seq BIGINT NOT NULL, created BIGINT NOT NULL, used BIGINT, lease TEXT,
		due_wall BIGINT NOT NULL DEFAULT 0, due_boot_id TEXT NOT NULL DEFAULT '', due_boot BIGINT NOT NULL DEFAULT 0)`,
}

// upgrade adds the reservation columns a root made before them lacks:
// lease (the lease table comes with the schema) and the due deadline; on
// PostgreSQL it also leaves room in the reservation table's pages.
func (s *store) upgrade(ctx context.Context, t *sql.Tx) error {
	if err := s.leaveRoom(ctx, t); err != nil {
		return err
	}
	for _, c := range []struct{ name, def string }{
		{"lease", "TEXT"},
		{"due_wall", "BIGINT NOT NULL DEFAULT 0"},
		{"due_boot_id", "TEXT NOT NULL DEFAULT ''"},
		{"due_boot", "BIGINT NOT NULL DEFAULT 0"},
	} {
		if s.d == postgresDialect {
			if err := s.exec(ctx, t, `ALTER TABLE budget_reservation ADD COLUMN IF NOT EXISTS `+c.name+` `+c.def); err != nil {
				return err
			}
			continue
		}
		var n int
		if err := s.queryRow(ctx, t, `SELECT COUNT(*) FROM pragma_table_info('budget_reservation') WHERE name = ?`, c.name).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			if err := s.exec(ctx, t, `ALTER TABLE budget_reservation ADD COLUMN `+c.name+` `+c.def); err != nil {
				return err
			}
		}
	}
	return nil
}

// reservationFill is the fill factor of the PostgreSQL reservation table:
// a settlement then finds room on its row's page to update it in place
// (a heap-only tuple: no new index entry, no write to the index).
const reservationFill = 50

// leaveRoom sets the reservation table's fill factor where it is not set
// yet (an ALTER TABLE at every open would write the catalog and lock the
// table each time).
func (s *store) leaveRoom(ctx context.Context, t *sql.Tx) error {
	if s.d != postgresDialect {
		return nil
	}
	want := fmt.Sprintf("fillfactor=%d", reservationFill)
	var set bool
	err := s.queryRow(ctx, t, `SELECT COALESCE(? = ANY(reloptions), false) FROM pg_class WHERE oid = 'budget_reservation'::regclass`, want).Scan(&set)
	if err != nil || set {
		return err
	}
	return s.exec(ctx, t, fmt.Sprintf(`ALTER TABLE budget_reservation SET (fillfactor = %d)`, reservationFill))
}

// tx runs fn in one transaction, committed durably when fn succeeds. On
// PostgreSQL the group row lock (forUpdate) serialises admissions; a
// serialisation or deadlock failure is retried.
func (s *store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	for attempt := 0; ; attempt++ {
		err := s.tryTx(ctx, fn)
		if err == nil || attempt >= 5 || !retryable(err) {
			return s.classify(err)
		}
	}
}

func (s *store) tryTx(ctx context.Context, fn func(*sql.Tx) error) error {
	t, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(t); err != nil {
		t.Rollback()
		return err
	}
	return t.Commit()
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// classify turns database errors into faults; faults pass unchanged.
func (s *store) classify(err error) error {
	if err == nil {
		return nil
	}
	var fe *fault.Error
	if errors.As(err, &fe) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fault.As(err)
	}
	if sqlitefault.Busy(err) {
		return fault.Wrap(fault.Unavailable, err, "budget store is busy (another process held it longer than %v)", limits.BudgetBusyTimeout).RetryIn(sqlitefault.RetryAfter)
	}
	return sqlitefault.Fault(err, "the budget store", "budget store ("+s.d.name+")")
}

func (s *store) exec(ctx context.Context, t *sql.Tx, q string, args ...any) error {
	_, err := t.ExecContext(ctx, s.d.rebind(q), args...)
	return err
}

func (s *store) queryRow(ctx context.Context, t *sql.Tx, q string, args ...any) *sql.Row {
	return t.QueryRowContext(ctx, s.d.rebind(q), args...)
}
