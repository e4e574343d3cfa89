package semindex

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/internal/sqlitefault"
	"github.com/capkit/capkit/internal/sqlitepin"
	"github.com/capkit/capkit/limits"
)

// Format is the schema version this package writes. An index of format
// "2" (vector blocks without versions) is brought to it when opened.
const Format = "3"

const schema = `
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS refs(
	id INTEGER PRIMARY KEY,
	ref TEXT NOT NULL UNIQUE,
	digest TEXT NOT NULL,
	text_sha256 TEXT NOT NULL,
	chars INTEGER NOT NULL,
	chunks INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sources(ref_id INTEGER PRIMARY KEY REFERENCES refs(id) ON DELETE CASCADE, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks(
	id INTEGER PRIMARY KEY,
	ref_id INTEGER NOT NULL REFERENCES refs(id) ON DELETE CASCADE,
	cstart INTEGER NOT NULL,
	cend INTEGER NOT NULL,
	pieces INTEGER NOT NULL,
	block_id INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_ref ON chunks(ref_id);
CREATE INDEX IF NOT EXISTS chunks_block ON chunks(block_id);
CREATE TABLE IF NOT EXISTS vec_blocks(
	id INTEGER PRIMARY KEY,
	ver INTEGER NOT NULL,
	n INTEGER NOT NULL,
	ids BLOB NOT NULL,
	vecs BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS vec_blocks_n ON vec_blocks(n);
CREATE TABLE IF NOT EXISTS scopes(name TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS scope_refs(
	name TEXT NOT NULL REFERENCES scopes(name) ON DELETE CASCADE,
	ref TEXT NOT NULL,
	PRIMARY KEY(name, ref)) WITHOUT ROWID;
`

// Index is an open semantic index. It is safe for concurrent use; writes
// are serialised by SQLite (one transaction per mutation), also across
// processes.
type Index struct {
	db  *sql.DB
	pin *scope.Pinned // the directory an index opened in a root is reached through
	// scan is the set of connections one search at a time splits its
	// scan across.
	scan scanSet
	// cache keeps blocks between searches; nil with DisableCache.
	cache *blockCache
}

// OpenOptions qualify Open and OpenIn. A nil *OpenOptions is valid.
type OpenOptions struct {
	// NoCreate makes a missing index not_found instead of creating it.
	NoCreate bool
	// Protected are the paths OpenIn never opens an index at (the zero
	// value: .git and capkit.toml in every root), nor its sidecars: SQLite
	// creates those next to the database when it opens it, also to read.
	Protected capability.Protected
	// CacheBytes bounds the vector blocks the Index keeps in memory
	// between searches (blockCache: a block is kept the second time a
	// search reads it); zero means limits.SemCacheBytes, and it is at
	// most limits.SemMaxCacheBytes.
	CacheBytes int64
	// DisableCache keeps no vectors in memory between searches: every
	// search reads every block from the file, several times slower than
	// from memory (bench/RESULTS.md).
	DisableCache bool
}

// cacheFor returns the cache o asks for, nil for none.
func cacheFor(o *OpenOptions) (*blockCache, error) {
	if o == nil {
		return newBlockCache(newCacheBudget(limits.SemCacheBytes)), nil
	}
	switch {
	case o.DisableCache:
		return nil, nil
	case o.CacheBytes < 0:
		return nil, fault.New(fault.InvalidInput, "CacheBytes %d is negative", o.CacheBytes)
	case o.CacheBytes > limits.SemMaxCacheBytes:
		return nil, fault.LimitExceeded("cache bytes", limits.SemMaxCacheBytes, o.CacheBytes)
	case o.CacheBytes == 0:
		return newBlockCache(newCacheBudget(limits.SemCacheBytes)), nil
	}
	return newBlockCache(newCacheBudget(o.CacheBytes)), nil
}

// sidecars are the files SQLite keeps next to a database.
var sidecars = []string{"", "-wal", "-shm", "-journal"}

// Open opens or creates the index at the host path path.
func Open(ctx context.Context, path string, opts *OpenOptions) (*Index, error) {
	cache, err := cacheFor(opts)
	if err != nil {
		return nil, err
	}
	if opts != nil && opts.NoCreate {
		if _, err := os.Lstat(path); err != nil {
			return nil, missingIndex(err)
		}
	}
	return open(ctx, path, nil, cache)
}

func missingIndex(err error) error {
	if errors.Is(err, fs.ErrNotExist) || fault.CodeOf(err) == fault.NotFound {
		return fault.Wrap(fault.NotFound, err, "the index does not exist; add a source to create it")
	}
	return fault.As(err)
}

// OpenIn opens or creates the index at path, resolved in the scope of
// roots with OpenOptions.Protected: its directory is pinned
// (scope.Target.Pin) once neither the database nor its sidecars is a
// protected path, and SQLite reaches every file through that directory's
// descriptor (sqlitepin), so no element of the path leads out of the root
// and no directory swapped for a link later leads SQLite elsewhere. A last
// element that is a symbolic link, directory or special file is refused.
func OpenIn(ctx context.Context, roots []string, path string, opts *OpenOptions) (*Index, error) {
	var o OpenOptions
	if opts != nil {
		o = *opts
	}
	cache, err := cacheFor(&o)
	if err != nil {
		return nil, err
	}
	at, err := resolveIndex(roots, path, &o)
	if err != nil {
		return nil, err
	}
	return at.open(ctx, cache)
}

// indexAt is an index path resolved inside a root: its pinned directory,
// and the file's metadata when it exists.
type indexAt struct {
	pin    *scope.Pinned
	st     scope.Stat
	exists bool
}

// resolveIndex resolves path as OpenIn does, with its checks.
func resolveIndex(roots []string, path string, o *OpenOptions) (*indexAt, error) {
	if o == nil {
		o = &OpenOptions{}
	}
	t, err := scope.In(roots, o.Protected).Resolve(path)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	pin, err := t.Pin(sidecars[1:]...)
	if err != nil {
		return nil, err
	}
	st, err := pin.Lstat("", "index")
	switch {
	case err == nil && !st.Mode.IsRegular():
		pin.Close()
		return nil, fault.New(fault.InvalidInput, "the index path is %s, not a database file", scope.Kind(st.Mode))
	case err != nil && (fault.CodeOf(err) != fault.NotFound || o.NoCreate):
		pin.Close()
		return nil, missingIndex(err)
	}
	return &indexAt{pin: pin, st: st, exists: err == nil}, nil
}

// open opens the index at a, which then holds a's directory.
func (a *indexAt) open(ctx context.Context, cache *blockCache) (*Index, error) {
	path, err := sqlitepin.Path(a.pin)
	if err == nil {
		var ix *Index
		if ix, err = open(ctx, path, a.pin, cache); err == nil {
			return ix, nil
		}
	}
	a.pin.Close()
	return nil, err
}

func open(ctx context.Context, path string, pin *scope.Pinned, cache *blockCache) (*Index, error) {
	registerOnce()
	if err := sqlitepin.Ready(); err != nil {
		return nil, err
	}
	dsn := "file:" + uriEscape(path) + fmt.Sprintf("?_pragma=busy_timeout(10000)&_pragma=page_size(%d)&", limits.SemPageBytes) + "_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, dbFault(err, "opening the index")
	}
	ix := &Index{db: db, pin: pin, cache: cache}
	if err := ix.init(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return ix, nil
}

func uriEscape(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
}

func (ix *Index) init(ctx context.Context) error {
	// WAL is set here, not among the connection's pragmas (which the
	// driver runs in name order): it fixes the page size of a new
	// database, so the page size pragma must come first. The mode is
	// persistent; later connections open in it.
	var mode string
	if err := ix.db.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode); err != nil {
		return dbFault(err, "opening the index")
	}
	var f string
	err := ix.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'format'`).Scan(&f)
	switch {
	case err == nil && f == Format:
		return nil
	case err == nil && f == "2":
		return ix.versionBlocks(ctx)
	case err == nil:
		return formatMismatch(f)
	}
	return ix.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return dbFault(err, "creating the index schema")
		}
		var f string
		err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'format'`).Scan(&f)
		if errors.Is(err, sql.ErrNoRows) {
			_, err = tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES('format', ?), ('window', ?), ('generation', '0')`, Format, fmt.Sprint(limits.SemWindow))
			return dbFault(err, "writing the index metadata")
		}
		if err != nil {
			return dbFault(err, "reading the index metadata")
		}
		if f != Format {
			return formatMismatch(f)
		}
		return nil
	})
}

// versionBlocks brings an index of format "2" to Format: its vector
// blocks get a version each (the table is rebuilt, as SQLite adds a
// column only at the end of a row, past the blobs), in one transaction.
func (ix *Index) versionBlocks(ctx context.Context) error {
	return ix.write(ctx, func(tx *sql.Tx) error {
		var f string
		if err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'format'`).Scan(&f); err != nil {
			return dbFault(err, "reading the index metadata")
		}
		if f == Format {
			return nil // another connection did it first
		}
		for _, q := range []string{
			`CREATE TABLE vec_blocks_v(id INTEGER PRIMARY KEY, ver INTEGER NOT NULL, n INTEGER NOT NULL, ids BLOB NOT NULL, vecs BLOB NOT NULL)`,
			`INSERT INTO vec_blocks_v(id, ver, n, ids, vecs) SELECT id, random(), n, ids, vecs FROM vec_blocks`,
			`DROP TABLE vec_blocks`,
			`ALTER TABLE vec_blocks_v RENAME TO vec_blocks`,
			`CREATE INDEX vec_blocks_n ON vec_blocks(n)`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return dbFault(err, "versioning the vector blocks")
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE meta SET value = ? WHERE key = 'format'`, Format)
		return dbFault(err, "writing the index metadata")
	})
}

func formatMismatch(f string) error {
	return fault.New(fault.InvalidInput, "the database is a semantic index of format %q; this capkit reads only format %q: build a new index (add the sources again) and remove the old file", f, Format)
}

// Close closes the database.
func (ix *Index) Close() error {
	ix.scan.close()
	if ix.cache != nil {
		ix.cache.close()
	}
	err := ix.db.Close()
	if ix.pin != nil {
		ix.pin.Close()
	}
	return err
}

// write runs fn in one immediate transaction: all of it or none.
func (ix *Index) write(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return dbFault(err, "starting a transaction")
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	// Every mutation moves the generation, so that readers on several
	// connections can tell they see one snapshot.
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'`); err != nil {
		tx.Rollback()
		return dbFault(err, "committing")
	}
	return dbFault(tx.Commit(), "committing")
}

// dbFault classifies a database error; nil stays nil.
func dbFault(err error, doing string) error {
	return sqlitefault.Fault(err, "the index", doing)
}

func checkRef(ref string) error {
	if ref == "" || len(ref) > limits.SemRefMaxBytes || !utf8.ValidString(ref) {
		return fault.New(fault.InvalidInput, "a ref is 1 to %d bytes of UTF-8", limits.SemRefMaxBytes)
	}
	return nil
}

func checkDigest(d string) error {
	if d == "" || len(d) > limits.SemRefMaxBytes || !utf8.ValidString(d) {
		return fault.New(fault.InvalidInput, "a digest is 1 to %d bytes of UTF-8", limits.SemRefMaxBytes)
	}
	return nil
}

// TextDigest is the digest Add records when the caller gives none: the hex
// SHA-256 of the text.
func TextDigest(text string) string {
	s := sha256.Sum256([]byte(text))
	return hex.EncodeToString(s[:])
}

// metaValue reads one metadata value; "" when absent.
func metaValue(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, key string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, dbFault(err, "reading the index metadata")
}
