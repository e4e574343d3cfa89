package textarchive

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/internal/noreplace"
)

// Migrated says what a migration did.
type Migrated struct {
	From int `json:"from"`
	To   int `json:"to"`
	// Retained is the root-relative path of the database as it was
	// before the migration, kept.
	Retained string `json:"retained,omitempty"`
}

// Migrate brings the archive at dir to this package's schema, forward
// only: a copy of the database as it is (VACUUM INTO) is kept first
// under retained/archive-schema-N.db, never replacing one already there,
// then every migration from its schema on runs in one write transaction,
// which a crash leaves undone or done. An archive at this schema is left
// as it is; one at a later schema is refused.
func Migrate(ctx context.Context, dir string) (*Migrated, error) {
	dir, err := absDir(dir)
	if err != nil {
		return nil, err
	}
	root, err := atfile.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	a := &Archive{dir: dir, root: root, stmts: map[string]*sql.Stmt{}, now: time.Now}
	defer a.Close()
	if err := checkDBFiles(root, dir); err != nil {
		return nil, err
	}
	if a.db, a.conn, err = openDB(ctx, filepath.Join(dir, dbName), "rw"); err != nil {
		return nil, err
	}
	var from int
	if err := a.read(ctx, "reading the schema", func(t *txn) (err error) { from, err = readSchema(t); return err }); err != nil {
		return nil, err
	}
	out := &Migrated{From: from, To: from}
	switch {
	case from == schemaVersion:
		return out, nil
	case from > schemaVersion:
		return nil, fault.New(fault.InvalidInput, "the archive is at schema %d, made by a newer capkit than this one (schema %d)", from, schemaVersion)
	}
	if out.Retained, err = a.retainOriginal(ctx, from); err != nil {
		return nil, err
	}
	step("migrate.retained")
	err = a.write(ctx, "migrating the archive", func(t *txn) error {
		if v, err := readSchema(t); err != nil || v != from {
			return fault.New(fault.Conflict, "the archive's schema changed while it was being migrated: run migrate again")
		}
		for _, m := range migrations[from-1:] {
			if err := m.run(t); err != nil {
				return err
			}
		}
		if err := t.setMeta("schema", strconv.Itoa(schemaVersion)); err != nil {
			return err
		}
		step("migrate.applied")
		return nil
	})
	if err != nil {
		return nil, err
	}
	step("migrate.committed")
	out.To = schemaVersion
	return out, nil
}

// retainOriginal keeps a copy of the database at schema from under
// retained/, unless one is there (an earlier, interrupted migration's:
// the database has not changed since).
func (a *Archive) retainOriginal(ctx context.Context, from int) (string, error) {
	name := "archive-schema-" + strconv.Itoa(from) + ".db"
	rel := keptDir + "/" + name
	if made, err := a.root.Mkdir(keptDir, 0o700, keptDir); err != nil {
		return "", err
	} else if made {
		if err := a.root.Sync(); err != nil {
			return "", err
		}
	}
	kept, _, err := a.root.OpenSubdir(keptDir, keptDir)
	if err != nil {
		return "", err
	}
	defer kept.Close()
	if _, err := kept.Lstat(name, rel); err == nil {
		return rel, nil
	} else if fault.CodeOf(err) != fault.NotFound {
		return "", err
	}
	sd, staging, err := kept.MkdirStaging(ctx, "archive-migrate")
	if err != nil {
		return "", err
	}
	defer func() {
		sd.Close()
		kept.RemoveStaging(staging)
	}()
	copyPath := filepath.Join(a.dir, keptDir, staging, name)
	if _, err := a.conn.ExecContext(ctx, `VACUUM INTO ?1`, copyPath); err != nil {
		return "", dbFault(err, "keeping the original database")
	}
	f, err := os.OpenFile(copyPath, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", atfile.Fault(err, "the original's copy")
	}
	err = f.Sync()
	f.Close()
	if err != nil {
		return "", fault.Wrap(fault.IO, err, "syncing the original's copy failed")
	}
	if err := noreplace.RenameBetween(sd.File(), name, kept.File(), name); err != nil {
		return "", err
	}
	return rel, noreplace.SyncDir(kept.File())
}
