// Package lexindex is a lexical full-text index in a SQLite database the
// caller names and owns: documents under opaque references, each with the
// caller's digest of its current content, ranked by SQLite FTS5's bm25().
//
//   - Mutations (Apply) add, replace or remove documents of at most
//     limits.LexMaxDocumentBytes of UTF-8 text. A batch is one
//     transaction in a write-ahead-logged database: after a crash at any
//     instant the index holds the state before the batch or after it.
//     A mutation that names the digest it expects to replace fails the
//     whole batch with fault.Conflict when the index holds another.
//   - Status reports, for given refs or all of them, whether each is
//     indexed, at which digest, and whether a current digest the caller
//     supplies says it is stale.
//   - Search takes terms (all required), a phrase, or an explicit FTS5
//     query, checked before SQLite sees it so a malformed one fails with
//     fault.InvalidInput naming its position. Hits are ranked by bm25()
//     over the whole database's statistics, at most limits.LexMaxHits,
//     with snippets on request.
//   - Scopes are named sets of refs stored in the database. A search
//     restricted to a scope filters inside the ranked query, before the
//     limit, so hits outside the scope never displace hits inside it;
//     neither corpus nor scope has a size ceiling.
//
// Two processes may write one index: writers take SQLite's write lock
// up front (BEGIN IMMEDIATE) and wait for each other for as long as their
// context allows, then fail with fault.Unavailable.
//
// The database is created with FTS5's unicode61 tokenizer unless
// Options.Tokenizer names another; an existing database keeps its own.
// The driver is modernc.org/sqlite: SQLite compiled to Go, no cgo.
package lexindex

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/internal/sqlitefault"
	"github.com/capkit/capkit/internal/sqlitepin"
)

// schemaFormat identifies this package's schema in the meta table.
const schemaFormat = "capkit-lexindex-1"

// DefaultTokenizer is FTS5's default tokenizer.
const DefaultTokenizer = "unicode61"

// Options configure Open. A nil *Options opens an existing index.
type Options struct {
	// Create makes the database when it does not exist; otherwise a
	// missing database is fault.NotFound.
	Create bool
	// Tokenizer is the FTS5 tokenizer of a database Create makes, such as
	// "porter unicode61" or "trigram"; empty means DefaultTokenizer.
	Tokenizer string
}

// Index is an open lexical index. Its methods are safe for concurrent
// use; they run one at a time on one connection.
type Index struct {
	mu   sync.Mutex
	db   *sql.DB
	conn *sql.Conn
	// pin is the directory an index opened in a scope is reached through.
	pin *scope.Pinned
	// Tokenizer is the database's tokenizer.
	Tokenizer string
}

// Open opens the index in the SQLite database at the host path path.
func Open(ctx context.Context, path string, opts *Options) (*Index, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Tokenizer == "" {
		o.Tokenizer = DefaultTokenizer
	}
	if err := checkTokenizer(o.Tokenizer); err != nil {
		return nil, err
	}
	mode := "rw"
	if o.Create {
		mode = "rwc"
	}
	if err := sqlitepin.Ready(); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn(path, mode))
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "opening the index failed")
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, dbFault(err, "opening the index")
	}
	ix := &Index{db: db, conn: conn}
	// A page cache large enough for a batch of full documents: a smaller
	// one spills pages to the log in mid-transaction.
	if _, err := conn.ExecContext(ctx, "PRAGMA cache_size = -"+strconv.Itoa(cacheKiB)); err != nil {
		ix.Close()
		return nil, dbFault(err, "opening the index")
	}
	if err := ix.init(ctx, o); err != nil {
		ix.Close()
		return nil, err
	}
	return ix, nil
}

// Close closes the index.
func (ix *Index) Close() error {
	err := errors.Join(ix.conn.Close(), ix.db.Close())
	if ix.pin != nil {
		ix.pin.Close()
	}
	return err
}

// dsn is the driver's name for path: a URI, so a path holding "?" or "#"
// stays a path. A short busy timeout makes SQLite wait a little for
// another writer; Go retries beyond it while the context allows.
func dsn(path, mode string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + r.Replace(path) + "?mode=" + mode +
		"&_pragma=busy_timeout(" + strconv.FormatInt(busyTimeout.Milliseconds(), 10) + ")" +
		"&_pragma=journal_mode(wal)&_pragma=synchronous(full)&_pragma=foreign_keys(1)"
}

const busyTimeout = 200 * time.Millisecond

// cacheKiB is the connection's page cache, in KiB.
const cacheKiB = 64 << 10

var schema = []string{
	`CREATE TABLE IF NOT EXISTS lexindex_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS docs(id INTEGER PRIMARY KEY, ref TEXT NOT NULL UNIQUE, digest TEXT NOT NULL, bytes INTEGER NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS scopes(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)`,
	`CREATE TABLE IF NOT EXISTS scope_refs(scope INTEGER NOT NULL REFERENCES scopes(id) ON DELETE CASCADE, ref TEXT NOT NULL, PRIMARY KEY(scope, ref)) WITHOUT ROWID`,
}

// init checks an existing database's format, or creates the schema.
func (ix *Index) init(ctx context.Context, o Options) error {
	return ix.write(ctx, func(tx *txn) error {
		var n int
		if err := tx.row(`SELECT count(*) FROM sqlite_schema WHERE name = 'lexindex_meta'`).Scan(&n); err != nil {
			return err
		}
		if n == 1 {
			return ix.readMeta(tx)
		}
		if err := tx.row(`SELECT count(*) FROM sqlite_schema`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fault.New(fault.InvalidInput, "the database holds other tables and no lexical index: name a new file or an index made by capkit")
		}
		if err := create(tx, o.Tokenizer); err != nil {
			return err
		}
		ix.Tokenizer = o.Tokenizer
		return nil
	})
}

func (ix *Index) readMeta(tx *txn) error {
	tok, owner, err := readMeta(tx)
	switch {
	case err != nil:
		return err
	case owner != "":
		return fault.New(fault.InvalidInput, "the database's lexical index belongs to a %s and changes only with it: use its own commands", clip.Text(owner))
	}
	ix.Tokenizer = tok
	return nil
}

// readMeta returns the tokenizer of the index in tx's database and, for
// an embedded one, its owner.
func readMeta(tx *txn) (tokenizer, owner string, err error) {
	var format string
	err = tx.row(`SELECT value FROM lexindex_meta WHERE key = 'format'`).Scan(&format)
	if err == nil && format == schemaFormat {
		err = tx.row(`SELECT value FROM lexindex_meta WHERE key = 'tokenizer'`).Scan(&tokenizer)
	}
	if err == nil {
		err = tx.row(`SELECT value FROM lexindex_meta WHERE key = 'owner'`).Scan(&owner)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
	}
	switch {
	case errors.Is(err, sql.ErrNoRows) || err == nil && format != schemaFormat:
		return "", "", fault.New(fault.InvalidInput, "the database is not a lexical index of this format (%q): name a new file", clip.Text(format))
	case err != nil:
		return "", "", err
	}
	return tokenizer, owner, nil
}

// create makes the index's tables with tokenizer in tx's database.
func create(tx *txn, tokenizer string) error {
	for _, s := range schema {
		if err := tx.exec(s); err != nil {
			return err
		}
	}
	if err := tx.exec(`CREATE VIRTUAL TABLE fts USING fts5(body, tokenize = ` + sqlString(tokenizer) + `)`); err != nil {
		return err
	}
	return tx.exec(`INSERT INTO lexindex_meta(key, value) VALUES ('format', ?1), ('tokenizer', ?2)`, schemaFormat, tokenizer)
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// checkTokenizer accepts FTS5's built-in tokenizers and their options,
// as plain words.
func checkTokenizer(t string) error {
	words := strings.Fields(t)
	if len(words) == 0 || len(t) > 256 {
		return fault.New(fault.InvalidInput, "tokenizer %q: give an FTS5 tokenizer such as %q", clip.Text(t), DefaultTokenizer)
	}
	switch words[0] {
	case "unicode61", "ascii", "porter", "trigram":
	default:
		return fault.New(fault.InvalidInput, "tokenizer %q: the first word must be unicode61, ascii, porter or trigram", clip.Text(words[0]))
	}
	for _, w := range words {
		for _, c := range w {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
				return fault.New(fault.InvalidInput, "tokenizer %q: options are lowercase words and numbers", clip.Text(t))
			}
		}
	}
	return nil
}

// dbFault classifies a driver error; what names the operation.
func dbFault(err error, what string) error {
	return sqlitefault.Fault(err, "the index", what)
}

func containsFold(s, sub string) bool { return strings.Contains(strings.ToLower(s), sub) }

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
