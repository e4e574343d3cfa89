package lexindex

import (
	"context"
	"database/sql"
	"strings"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
)

// Tables is a lexical index embedded in a SQLite database another package
// owns (the text archive): its tables beside the owner's, its operations
// inside the owner's transactions on the owner's connection, so that a
// change of the owner's records and of their index commit or roll back
// together. It is the engine of Index (schema, query checker, BM25
// ranking, snippets); Open refuses such a database, so that the index
// changes only with its owner.
//
// A Tables is not safe for concurrent use: its owner serialises the
// connection it runs on. Its prepared statements outlive transactions.
type Tables struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
	// Tokenizer is the index's tokenizer.
	Tokenizer string
}

// Embed creates the index's tables in the database of conn, marked as
// owner's and with tokenizer (empty: DefaultTokenizer), or opens those it
// already holds, which must be owner's. It runs inside the write
// transaction the caller began on conn.
func Embed(ctx context.Context, conn *sql.Conn, owner, tokenizer string) (*Tables, error) {
	if tokenizer == "" {
		tokenizer = DefaultTokenizer
	}
	if err := checkTokenizer(tokenizer); err != nil {
		return nil, err
	}
	if err := checkName("owner", owner); err != nil {
		return nil, err
	}
	t := &Tables{conn: conn, stmts: map[string]*sql.Stmt{}}
	tx := t.tx(ctx)
	var n int
	if err := tx.row(`SELECT count(*) FROM sqlite_schema WHERE name = 'lexindex_meta'`).Scan(&n); err != nil {
		t.Close()
		return nil, dbFault(err, "opening the index")
	}
	if n == 0 {
		err := create(tx, tokenizer)
		if err == nil {
			err = tx.exec(`INSERT INTO lexindex_meta(key, value) VALUES ('owner', ?1)`, owner)
		}
		if err != nil {
			t.Close()
			return nil, dbFault(err, "creating the index")
		}
		t.Tokenizer = tokenizer
		return t, nil
	}
	tok, held, err := readMeta(tx)
	switch {
	case err != nil:
		t.Close()
		return nil, dbFault(err, "opening the index")
	case held != owner:
		t.Close()
		return nil, fault.New(fault.InvalidInput, "the database's lexical index is not a %s's", clip.Text(owner))
	}
	t.Tokenizer = tok
	return t, nil
}

func (t *Tables) tx(ctx context.Context) *txn { return &txn{ctx: ctx, conn: t.conn, stmts: t.stmts} }

// Apply applies batch in order inside the caller's write transaction, as
// Index.Apply does in its own; on failure the caller rolls back.
func (t *Tables) Apply(ctx context.Context, batch []Mutation) (Applied, error) {
	for i := range batch {
		if err := checkMutation(&batch[i], i); err != nil {
			return Applied{}, err
		}
	}
	done, err := applyBatch(t.tx(ctx), batch)
	if err != nil {
		return Applied{}, dbFault(err, "writing the index")
	}
	return done, nil
}

// Search runs q inside the caller's transaction, as Index.Search does.
func (t *Tables) Search(ctx context.Context, q Query) (*Result, error) {
	match, limit, err := prepare(&q)
	if err != nil {
		return nil, err
	}
	res := &Result{Match: match, Mode: q.Mode, Scope: q.Scope, Prefix: q.Prefix, Limit: limit, Offset: q.Offset}
	if err := searchIn(t.tx(ctx), res, q.Snippets); err != nil {
		return nil, dbFault(err, "searching the index")
	}
	return res, nil
}

// Check verifies the full-text index against the text it holds (FTS5's
// integrity-check) and that every document has its row of text and no
// row is without a document: integrity when either fails.
func (t *Tables) Check(ctx context.Context) error {
	tx := t.tx(ctx)
	// The pragma runs FTS5's own check (since SQLite 3.44) in a read
	// transaction; the 'integrity-check' command would take the write
	// lock.
	var verdict string
	if err := tx.row(`PRAGMA integrity_check(fts)`).Scan(&verdict); err != nil {
		return dbFault(err, "checking the index")
	}
	if verdict != "ok" {
		return fault.New(fault.Integrity, "the full-text index does not match the text it holds: %s", clip.N(verdict, 256))
	}
	return t.CheckRows(ctx)
}

// CheckRows is Check but for FTS5's own check, for an owner that runs
// SQLite's integrity_check of the whole database, which runs that check
// (on every FTS5 table, since SQLite 3.44): running it twice would double
// the cost of a check. IsIndexMessage tells which of the pragma's
// messages are the index's.
func (t *Tables) CheckRows(ctx context.Context) error {
	tx := t.tx(ctx)
	var missing, extra int64
	if err := tx.row(`SELECT count(*) FROM docs AS d WHERE NOT EXISTS (SELECT 1 FROM fts WHERE rowid = d.id)`).Scan(&missing); err != nil {
		return dbFault(err, "checking the index")
	}
	if err := tx.row(`SELECT count(*) FROM fts WHERE rowid NOT IN (SELECT id FROM docs)`).Scan(&extra); err != nil {
		return dbFault(err, "checking the index")
	}
	if missing > 0 || extra > 0 {
		return fault.New(fault.Integrity, "the full-text index has %d documents without text and %d texts without a document", missing, extra)
	}
	return nil
}

// IsIndexMessage reports whether msg, a line of SQLite's integrity_check
// of a database the index is embedded in, is FTS5's about the index's
// full-text table: the messages FTS5's check gives ("malformed inverted
// index for FTS5 table main.fts", "unable to validate the inverted index
// for FTS5 table main.fts: …") or its reader's ("fts5: corruption found
// reading blob … from table \"fts\"", "fts5: missing row … from content
// table …").
func IsIndexMessage(msg string) bool {
	return strings.Contains(msg, "FTS5 table main.fts") || strings.HasPrefix(msg, "fts5: ")
}

// Entry is one indexed document with the text the full-text table holds
// for it.
type Entry struct {
	Ref, Digest, Text string
}

// Entries calls fn with the documents whose refs are in refs, in the
// order given, skipping refs the index does not hold; it reports how many
// it found. The refs are looked up in one query (a JSON array for
// json_each), not one query each: an audit asks for thousands at once.
func (t *Tables) Entries(ctx context.Context, refs []string, fn func(Entry) error) (int, error) {
	if len(refs) == 0 {
		return 0, nil
	}
	rows, err := t.tx(ctx).query(`SELECT d.ref, d.digest, f.body FROM json_each(?1) AS j
		JOIN docs AS d ON d.ref = j.value JOIN fts AS f ON f.rowid = d.id ORDER BY j.key`, jsonStrings(refs))
	if err != nil {
		return 0, dbFault(err, "reading the index")
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var e Entry
		if err := rows.Scan(&e.Ref, &e.Digest, &e.Text); err != nil {
			return n, dbFault(err, "reading the index")
		}
		n++
		if err := fn(e); err != nil {
			return n, err
		}
	}
	if err := rows.Err(); err != nil {
		return n, dbFault(err, "reading the index")
	}
	return n, nil
}

// Count is how many documents the index holds.
func (t *Tables) Count(ctx context.Context) (int64, error) {
	var n int64
	if err := t.tx(ctx).row(`SELECT count(*) FROM docs`).Scan(&n); err != nil {
		return 0, dbFault(err, "reading the index")
	}
	return n, nil
}

// Refs calls fn with every indexed ref after after, in ref order, at
// most limit of them; it returns the last ref given.
func (t *Tables) Refs(ctx context.Context, after string, limit int, fn func(ref, digest string) error) (string, error) {
	rows, err := t.tx(ctx).query(`SELECT ref, digest FROM docs WHERE ref > ?1 ORDER BY ref LIMIT ?2`, after, limit)
	if err != nil {
		return "", dbFault(err, "reading the index")
	}
	defer rows.Close()
	last := ""
	for rows.Next() {
		var ref, digest string
		if err := rows.Scan(&ref, &digest); err != nil {
			return "", dbFault(err, "reading the index")
		}
		last = ref
		if err := fn(ref, digest); err != nil {
			return "", err
		}
	}
	if err := rows.Err(); err != nil {
		return "", dbFault(err, "reading the index")
	}
	return last, nil
}

// Reset removes every document and makes the full-text table anew, its
// shadow tables with it, inside the caller's write transaction: what a
// rebuild from the owner's records starts from, whatever state the old
// tables were in.
func (t *Tables) Reset(ctx context.Context) error {
	t.Close()
	t.stmts = map[string]*sql.Stmt{}
	tx := t.tx(ctx)
	for _, q := range []string{`DELETE FROM docs`, `DROP TABLE fts`,
		`CREATE VIRTUAL TABLE fts USING fts5(body, tokenize = ` + sqlString(t.Tokenizer) + `)`} {
		if err := tx.exec(q); err != nil {
			return dbFault(err, "resetting the index")
		}
	}
	// Statements prepared against the old table are stale.
	t.Close()
	t.stmts = map[string]*sql.Stmt{}
	return nil
}

// Close releases the prepared statements; the connection stays the
// owner's.
func (t *Tables) Close() {
	for _, s := range t.stmts {
		s.Close()
	}
	clear(t.stmts)
}
