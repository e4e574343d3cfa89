package lexindex

import (
	"context"
	"database/sql"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/sqlitefault"
)

// txn is one transaction on the index's connection.
type txn struct {
	ctx   context.Context
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
}

func (t *txn) stmt(q string) (*sql.Stmt, error) {
	if s, ok := t.stmts[q]; ok {
		return s, nil
	}
	s, err := t.conn.PrepareContext(t.ctx, q)
	if err != nil {
		return nil, err
	}
	t.stmts[q] = s
	return s, nil
}

func (t *txn) exec(q string, args ...any) error {
	s, err := t.stmt(q)
	if err == nil {
		_, err = s.ExecContext(t.ctx, args...)
	}
	return err
}

func (t *txn) row(q string, args ...any) *sql.Row {
	s, err := t.stmt(q)
	if err != nil {
		// A Row carries its error only from QueryRow: let the connection
		// report it.
		return t.conn.QueryRowContext(t.ctx, q, args...)
	}
	return s.QueryRowContext(t.ctx, args...)
}

func (t *txn) query(q string, args ...any) (*sql.Rows, error) {
	s, err := t.stmt(q)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(t.ctx, args...)
}

func (t *txn) close() {
	for _, s := range t.stmts {
		s.Close()
	}
}

// write runs fn in a write transaction, retrying while another writer
// holds the database and ctx allows. fn must not act outside the
// transaction: it may run more than once.
func (ix *Index) write(ctx context.Context, fn func(*txn) error) error {
	return ix.run(ctx, "BEGIN IMMEDIATE", "writing the index", fn)
}

// read runs fn in a read transaction: one consistent snapshot.
func (ix *Index) read(ctx context.Context, fn func(*txn) error) error {
	return ix.run(ctx, "BEGIN", "reading the index", fn)
}

func (ix *Index) run(ctx context.Context, begin, what string, fn func(*txn) error) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	wait := 10 * time.Millisecond
	for {
		err := ix.once(ctx, begin, fn)
		if err == nil {
			return nil
		}
		if !sqlitefault.Busy(err) || ctx.Err() != nil {
			return dbFault(err, what)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return dbFault(err, what)
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

func (ix *Index) once(ctx context.Context, begin string, fn func(*txn) error) (err error) {
	if _, err := ix.conn.ExecContext(ctx, begin); err != nil {
		return err
	}
	tx := &txn{ctx: ctx, conn: ix.conn, stmts: map[string]*sql.Stmt{}}
	defer func() {
		tx.close()
		if err != nil {
			// Roll back even when ctx is done: the connection must not
			// stay inside a transaction.
			if _, rerr := ix.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil && !isNoTxn(rerr) {
				err = fault.Wrap(fault.IO, rerr, "rolling back failed")
			}
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	_, err = ix.conn.ExecContext(ctx, "COMMIT")
	return err
}

// isNoTxn reports the error of a rollback after SQLite already ended the
// transaction itself.
func isNoTxn(err error) bool {
	return err != nil && containsFold(err.Error(), "no transaction is active")
}
