package textarchive

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/internal/noreplace"
	"github.com/capkit/capkit/internal/sqlitefault"
	"github.com/capkit/capkit/search/lexindex"
)

// The names inside an archive root.
const (
	dbName    = "archive.db"
	blobsDir  = "blobs"
	keptDir   = "retained"
	indexName = "text archive"
)

// sidecars are the files SQLite keeps next to the database.
var sidecars = []string{"-wal", "-shm", "-journal"}

// Archive is an open archive root. Its methods are safe for concurrent
// use; they run one at a time on one connection. Other processes may
// open the same root: writers serialise on the database's write lock.
type Archive struct {
	dir  string
	root *atfile.Dir
	// fs is the root as an os.Root, for the archive's own paths inside
	// it (staging directories included, which atfile.Dir refuses).
	fs    *os.Root
	mu    sync.Mutex
	db    *sql.DB
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
	ix    *lexindex.Tables
	id    string
	// now reads the clock; tests set it.
	now func() time.Time
}

// Init creates a new, empty archive at the absolute host path dir, which
// must not exist (its parent must): the root appears complete or not at
// all (built beside it, then published without replacing anything).
func Init(ctx context.Context, dir string) error {
	dir, err := absDir(dir)
	if err != nil {
		return err
	}
	parent, err := atfile.OpenDir(filepath.Dir(dir))
	if err != nil {
		return err
	}
	defer parent.Close()
	if _, err := parent.Lstat(filepath.Base(dir), "archive root"); err == nil {
		return fault.New(fault.Conflict, "%s exists: an archive is made in a new directory", clip.Text(dir))
	} else if fault.CodeOf(err) != fault.NotFound {
		return err
	}
	sd, staging, err := parent.MkdirStaging(ctx, "archive")
	if err != nil {
		return err
	}
	// The staging directory stays locked (against a sweep) until it is
	// renamed or removed.
	defer sd.Close()
	err = create(ctx, filepath.Join(filepath.Dir(dir), staging))
	if err == nil {
		err = publishDir(ctx, parent, staging, filepath.Base(dir))
	}
	if err != nil {
		parent.RemoveStaging(staging)
	}
	return err
}

// publishDir makes the staging directory staging of parent durable (every
// file and directory in it fsynced) and renames it to dest without
// replacing anything (renameat2 RENAME_NOREPLACE), fsyncing parent: the
// directory appears complete or not at all.
func publishDir(ctx context.Context, parent *atfile.Dir, staging, dest string) error {
	r, err := os.OpenRoot(filepath.Join(mustHost(parent), staging))
	if err != nil {
		return atfile.Fault(err, "staging directory")
	}
	err = syncTree(ctx, r, ".", 0)
	r.Close()
	if err != nil {
		return err
	}
	if err := noreplace.Rename(parent.File(), staging, dest); err != nil {
		if fault.CodeOf(err) == fault.Conflict {
			return fault.New(fault.Conflict, "%s exists: nothing was replaced", clip.Text(dest))
		}
		return err
	}
	return nil
}

func mustHost(d *atfile.Dir) string {
	p, err := d.HostPath()
	if err != nil {
		return "/nonexistent"
	}
	return p
}

// syncTree fsyncs every regular file and directory below rel in r (a
// tree this package built: no links, a few levels), then rel.
func syncTree(ctx context.Context, r *os.Root, rel string, depth int) error {
	if depth > 4 {
		return fault.New(fault.Internal, "the staged tree is deeper than the archive's layout")
	}
	d, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return atfile.Fault(err, "staged directory")
	}
	defer d.Close()
	for {
		if err := ctx.Err(); err != nil {
			return fault.As(err)
		}
		entries, rerr := d.ReadDir(1024)
		for _, e := range entries {
			name := rel + "/" + e.Name()
			switch {
			case e.IsDir():
				if err := syncTree(ctx, r, name, depth+1); err != nil {
					return err
				}
			case e.Type().IsRegular():
				f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
				if err != nil {
					return atfile.Fault(err, "staged file")
				}
				err = f.Sync()
				f.Close()
				if err != nil {
					return fault.Wrap(fault.IO, err, "syncing a staged file failed")
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return atfile.Fault(rerr, "staged directory")
		}
	}
	if err := d.Sync(); err != nil {
		return fault.Wrap(fault.IO, err, "syncing a staged directory failed")
	}
	return nil
}

func absDir(dir string) (string, error) {
	if dir == "" || strings.ContainsRune(dir, 0) {
		return "", fault.New(fault.InvalidInput, "the archive root is empty or holds a NUL byte")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fault.Wrap(fault.InvalidInput, err, "the archive root %s cannot be made absolute", clip.Text(dir))
	}
	return abs, nil
}

// create makes the database and the blob directory of a new root at dir.
func create(ctx context.Context, dir string) error {
	if err := os.Mkdir(filepath.Join(dir, blobsDir), 0o700); err != nil {
		return fault.Wrap(fault.IO, err, "creating the blob directory failed")
	}
	db, conn, err := openDB(ctx, filepath.Join(dir, dbName), "rwc")
	if err != nil {
		return err
	}
	a := &Archive{db: db, conn: conn, stmts: map[string]*sql.Stmt{}, now: time.Now}
	defer a.closeDB()
	id := make([]byte, 16)
	rand.Read(id)
	return a.write(ctx, "creating the archive", func(t *txn) error {
		for _, s := range schemaV1 {
			if err := t.exec(s); err != nil {
				return err
			}
		}
		for _, m := range migrations {
			if err := m.run(t); err != nil {
				return err
			}
		}
		if err := t.exec(`INSERT INTO archive_meta(key, value) VALUES ('format', ?1), ('schema', ?2), ('id', ?3), ('created', ?4), ('head', ?5)`,
			formatName, strconv.Itoa(schemaVersion), hex.EncodeToString(id), a.stamp(), genesisHead); err != nil {
			return err
		}
		ix, err := lexindex.Embed(t.ctx, a.conn, indexName, "")
		if err != nil {
			return err
		}
		ix.Close()
		return nil
	})
}

// Open opens the archive at the host path dir. An archive of an earlier
// schema must be migrated first (Migrate); one of a later schema is
// refused.
func Open(ctx context.Context, dir string) (*Archive, error) {
	dir, err := absDir(dir)
	if err != nil {
		return nil, err
	}
	root, err := atfile.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	a := &Archive{dir: dir, root: root, stmts: map[string]*sql.Stmt{}, now: time.Now}
	if a.fs, err = atfile.OpenRoot(dir, "archive root"); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.open(ctx); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

func (a *Archive) open(ctx context.Context) error {
	if err := checkDBFiles(a.root, a.dir); err != nil {
		return err
	}
	db, conn, err := openDB(ctx, filepath.Join(a.dir, dbName), "rw")
	if err != nil {
		return err
	}
	a.db, a.conn = db, conn
	return a.read(ctx, "opening the archive", func(t *txn) error {
		v, err := readSchema(t)
		if err != nil {
			return err
		}
		switch {
		case v < schemaVersion:
			return fault.New(fault.InvalidInput, "the archive is at schema %d and this capkit reads schema %d: run capkit archive migrate on it first (the original is retained)", v, schemaVersion)
		case v > schemaVersion:
			return fault.New(fault.InvalidInput, "the archive is at schema %d, made by a newer capkit than this one (schema %d)", v, schemaVersion)
		}
		if a.id, err = t.meta("id"); err != nil {
			return err
		}
		a.ix, err = lexindex.Embed(t.ctx, a.conn, indexName, "")
		return err
	})
}

// checkDBFiles refuses a root whose database is missing or, like its
// sidecars, anything but a regular file: SQLite opens them by path.
func checkDBFiles(root *atfile.Dir, dir string) error {
	for _, suffix := range append([]string{""}, sidecars...) {
		st, err := root.Lstat(dbName+suffix, "archive database")
		switch {
		case fault.CodeOf(err) == fault.NotFound && suffix == "":
			return fault.New(fault.NotFound, "%s is not an archive (no %s): capkit archive init makes one", clip.Text(dir), dbName)
		case fault.CodeOf(err) == fault.NotFound:
		case err != nil:
			return err
		case !st.Mode.IsRegular():
			return atfile.NotRegular(dbName+suffix, st.Mode)
		}
	}
	return nil
}

// readSchema checks the database is an archive's and returns its schema
// version.
func readSchema(t *txn) (int, error) {
	var n int
	if err := t.row(`SELECT count(*) FROM sqlite_schema WHERE name = 'archive_meta'`).Scan(&n); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fault.New(fault.Integrity, "the database is not a text archive's (no archive_meta table)")
	}
	format, err := t.meta("format")
	if err != nil {
		return 0, err
	}
	if format != formatName {
		return 0, fault.New(fault.Integrity, "the database's format is %q, not %q", clip.Text(format), formatName)
	}
	s, err := t.meta("schema")
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return 0, fault.New(fault.Integrity, "the database's schema version %q is not a number", clip.Text(s))
	}
	return v, nil
}

// Dir is the archive root's absolute host path.
func (a *Archive) Dir() string { return a.dir }

// ID is the archive's identity: random, made by Init, kept by backup and
// restore; citations name it.
func (a *Archive) ID() string { return a.id }

// Close closes the archive.
func (a *Archive) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	err := a.closeDB()
	if a.root != nil {
		a.root.Close()
		a.root = nil
	}
	if a.fs != nil {
		a.fs.Close()
		a.fs = nil
	}
	return err
}

func (a *Archive) closeDB() error {
	if a.ix != nil {
		a.ix.Close()
		a.ix = nil
	}
	for _, s := range a.stmts {
		s.Close()
	}
	clear(a.stmts)
	var err error
	if a.conn != nil {
		err = a.conn.Close()
		a.conn = nil
	}
	if a.db != nil {
		err = errors.Join(err, a.db.Close())
		a.db = nil
	}
	return err
}

// openDB opens the database at path (a host path the caller checked):
// WAL, full synchronous commits, foreign keys, one connection.
func openDB(ctx context.Context, path, mode string) (*sql.DB, *sql.Conn, error) {
	dsn := dsnFile(path) + "?mode=" + mode +
		"&_pragma=busy_timeout(" + strconv.FormatInt(busyTimeout.Milliseconds(), 10) + ")" +
		"&_pragma=journal_mode(wal)&_pragma=synchronous(full)&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, nil, fault.Wrap(fault.Internal, err, "opening the archive's database failed")
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, dbFault(err, "opening the archive's database")
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA cache_size = -"+strconv.Itoa(cacheKiB)); err != nil {
		conn.Close()
		db.Close()
		return nil, nil, dbFault(err, "opening the archive's database")
	}
	return db, conn, nil
}

// dsnFile is the driver's URI of the database file at path, its
// query still to come.
func dsnFile(path string) string {
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

const (
	busyTimeout = 200 * time.Millisecond
	cacheKiB    = 64 << 10
)

// stamp is the time now as the archive records it.
func (a *Archive) stamp() string { return a.now().UTC().Format(time.RFC3339Nano) }

// txn is one transaction on the archive's connection.
type txn struct {
	ctx context.Context
	a   *Archive
}

func (t *txn) stmt(q string) (*sql.Stmt, error) {
	if s, ok := t.a.stmts[q]; ok {
		return s, nil
	}
	s, err := t.a.conn.PrepareContext(t.ctx, q)
	if err != nil {
		return nil, err
	}
	t.a.stmts[q] = s
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
		return t.a.conn.QueryRowContext(t.ctx, q, args...)
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

// meta reads a value of archive_meta.
func (t *txn) meta(key string) (string, error) {
	var v string
	err := t.row(`SELECT value FROM archive_meta WHERE key = ?1`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fault.New(fault.Integrity, "the archive's database has no %q", key)
	}
	return v, err
}

func (t *txn) setMeta(key, value string) error {
	return t.exec(`INSERT INTO archive_meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
}

// write runs fn in a write transaction (BEGIN IMMEDIATE), waiting while
// another writer holds the database and ctx allows. fn runs once.
func (a *Archive) write(ctx context.Context, what string, fn func(*txn) error) error {
	return a.run(ctx, "BEGIN IMMEDIATE", what, fn)
}

// read runs fn in a read transaction: one consistent snapshot.
func (a *Archive) read(ctx context.Context, what string, fn func(*txn) error) error {
	return a.run(ctx, "BEGIN", what, fn)
}

func (a *Archive) run(ctx context.Context, begin, what string, fn func(*txn) error) (err error) {
	if a.conn == nil {
		return fault.New(fault.InvalidInput, "the archive is closed")
	}
	wait := 10 * time.Millisecond
	for {
		_, err = a.conn.ExecContext(ctx, begin)
		if err == nil {
			break
		}
		if !sqlitefault.Busy(err) || ctx.Err() != nil {
			return dbFault(err, what)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return dbFault(err, what)
		case <-timer.C:
		}
		wait = min(2*wait, time.Second)
	}
	defer func() {
		if err != nil {
			// Even when ctx is done: the connection must not stay inside
			// a transaction.
			a.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			err = dbFault(err, what)
		}
	}()
	if err = fn(&txn{ctx: ctx, a: a}); err != nil {
		return err
	}
	_, err = a.conn.ExecContext(ctx, "COMMIT")
	return err
}

// locked runs fn holding the archive's mutex.
func (a *Archive) locked(fn func() error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fn()
}
