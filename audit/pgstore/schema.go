package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// The table: one row per event, numbered and chained per stream; the
// members readers filter and count on in columns, the canonical event as
// text (what the hash binds: jsonb would not keep its bytes).
const schema = `
CREATE TABLE IF NOT EXISTS capkit_audit (
	id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	stream      text        NOT NULL,
	host        text        NOT NULL,
	seq         bigint      NOT NULL,
	prev        text        NOT NULL,
	hash        text        NOT NULL,
	at          timestamptz NOT NULL,
	msg         text        NOT NULL,
	actor       text        NOT NULL,
	tool        text        NOT NULL,
	outcome     text        NOT NULL,
	policy      text        NOT NULL,
	duration_us bigint      NOT NULL,
	in_bytes    bigint      NOT NULL,
	out_bytes   bigint      NOT NULL,
	calls_left  bigint      NOT NULL,
	event       text        NOT NULL,
	UNIQUE (stream, seq)
);
CREATE INDEX IF NOT EXISTS capkit_audit_at ON capkit_audit (at);
CREATE INDEX IF NOT EXISTS capkit_audit_actor ON capkit_audit (actor, id);
CREATE INDEX IF NOT EXISTS capkit_audit_tool ON capkit_audit (tool, id);
CREATE INDEX IF NOT EXISTS capkit_audit_outcome ON capkit_audit (outcome, id);
`

// schemaLock is the advisory lock the processes making the table take,
// so that several starting at once do not race (CREATE ... IF NOT EXISTS
// alone does not keep two from colliding).
const schemaLock = 0x6361706b69746175 // "capkitau"

// ensureSchema makes the table and its indexes when they are missing.
func ensureSchema(ctx context.Context, pool *pgxpool.Pool) error {
	ctx, cancel := context.WithTimeout(ctx, limits.AuditStoreTimeout)
	defer cancel()
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fault.Wrap(fault.Unavailable, err, "the audit store cannot be reached")
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(schemaLock)); err != nil {
		return fault.Wrap(fault.Unavailable, err, "the audit store cannot be reached")
	}
	if _, err := tx.Exec(ctx, schema); err != nil {
		return fault.Wrap(fault.Unavailable, err, "the audit store's table cannot be made")
	}
	if err := tx.Commit(ctx); err != nil {
		return fault.Wrap(fault.Unavailable, err, "the audit store's table cannot be made")
	}
	return nil
}

const insertRows = `
INSERT INTO capkit_audit (stream, host, seq, prev, hash, at, msg, actor, tool, outcome, policy,
	duration_us, in_bytes, out_bytes, calls_left, event)
SELECT $1::text, $2::text, u.* FROM unnest($3::bigint[], $4::text[], $5::text[], $6::timestamptz[], $7::text[], $8::text[],
	$9::text[], $10::text[], $11::text[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::text[]) AS u
ON CONFLICT (stream, seq) DO NOTHING`

// insertName is insertRows' prepared statement, on each connection.
const insertName = "capkit_audit_insert"

// insert stores rows of one stream in one statement, its parameters
// encoded by a; rows already there (sent before) are left as they are.
func insert(ctx context.Context, pool *pgxpool.Pool, a *args, stream, host string, rows []row) error {
	ctx, cancel := context.WithTimeout(ctx, limits.AuditStoreTimeout)
	defer cancel()
	err := pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		sd, err := c.Conn().Prepare(ctx, insertName, insertRows)
		if err != nil {
			return err
		}
		_, err = c.Conn().PgConn().ExecStatement(ctx, sd, a.encode(stream, host, rows), binaryFormat, nil).Close()
		return err
	})
	a.release()
	if err != nil {
		return fault.Wrap(fault.Unavailable, err, "the audit store did not take %d events", len(rows))
	}
	return nil
}

// poolConfig is the connection pool for url: a few connections, and a
// bound on connecting, so an unreachable store is known quickly.
func poolConfig(url string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "the audit store URL cannot be parsed")
	}
	cfg.MaxConns = 2
	cfg.ConnConfig.ConnectTimeout = limits.AuditStoreTimeout
	return cfg, nil
}
