package lexindex

import (
	"context"
	"os"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/internal/sqlitepin"
)

// sidecars are the files SQLite keeps next to a database.
var sidecars = []string{"-wal", "-shm", "-journal"}

// openIn opens the index db in sc (creating it with create): its
// directory is pinned (scope.Target.Pin) once neither the database nor
// its sidecars is a protected path, as spelled or as the directory is
// named on disk (SQLite creates the sidecars when it opens a database,
// also to read), and SQLite opens every file through that directory's
// descriptor (sqlitepin), whatever is renamed or swapped meanwhile. The
// database and its sidecars must be regular files where they exist,
// never symbolic links; a missing database is not_found unless create.
func openIn(ctx context.Context, sc *scope.Scope, db string, create bool) (*Index, error) {
	t, err := sc.Resolve(db)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	pin, err := t.Pin(sidecars...)
	if err != nil {
		return nil, err
	}
	if err := checkFiles(pin, db, create); err != nil {
		pin.Close()
		return nil, err
	}
	path, err := sqlitepin.Path(pin)
	if err != nil {
		pin.Close()
		return nil, err
	}
	ix, err := Open(ctx, path, &Options{Create: create})
	if err != nil {
		pin.Close()
		return nil, err
	}
	ix.pin = pin
	return ix, nil
}

// checkFiles refuses a database or sidecar that exists and is not a
// regular file, and a missing database unless create.
func checkFiles(pin *scope.Pinned, db string, create bool) error {
	for _, suffix := range append([]string{""}, sidecars...) {
		st, err := pin.Lstat(suffix, "database")
		switch {
		case fault.CodeOf(err) == fault.NotFound && suffix == "" && !create:
			return fault.New(fault.NotFound, "no index at %s: add a document first", clip.Text(db))
		case fault.CodeOf(err) == fault.NotFound:
			continue
		case err != nil:
			return err
		case st.Mode&os.ModeSymlink != 0:
			return fault.New(fault.Denied, "%s%s is a symbolic link: an index is never opened through one", clip.Text(db), suffix)
		case !st.Mode.IsRegular():
			return scope.NotRegular("database", st.Mode)
		}
	}
	return nil
}
