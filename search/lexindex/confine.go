package lexindex

import (
	"os"
	"path/filepath"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/internal/clip"
)

// sidecars are the files SQLite keeps next to a database.
var sidecars = []string{"", "-wal", "-shm", "-journal"}

// ResolveDB maps a caller's database path onto roots (see fs.Resolve)
// and returns the host path to open: its directory is opened through an
// os.Root on the chosen root, so no element leads out of it, and the
// database and SQLite's files beside it (-wal, -shm, -journal) must be
// regular files if they exist, never symbolic links. SQLite then opens
// the database by that path: a symbolic link planted between this check
// and the open by someone else who can write in the root is not
// detected. A missing database is fault.NotFound unless create.
func ResolveDB(roots []string, path string, create bool) (string, error) {
	d, name, root, err := atfile.ResolveParent(roots, path)
	if err != nil {
		return "", err
	}
	defer d.Close()
	for _, suffix := range sidecars {
		st, err := d.Lstat(name+suffix, "database")
		switch {
		case fault.CodeOf(err) == fault.NotFound && suffix == "" && !create:
			return "", fault.New(fault.NotFound, "no index at %s: add a document first", clip.Text(path))
		case fault.CodeOf(err) == fault.NotFound:
			continue
		case err != nil:
			return "", err
		case st.Mode&os.ModeSymlink != 0:
			return "", fault.New(fault.Denied, "%s%s is a symbolic link: an index is never opened through one", clip.Text(path), suffix)
		case !st.Mode.IsRegular():
			return "", atfile.NotRegular("database", st.Mode)
		}
	}
	dir, err := d.HostPath()
	if err != nil {
		return "", err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fault.Wrap(fault.IO, err, "locating the root failed")
	}
	if !capability.Within(realRoot, dir) {
		return "", fault.New(fault.Denied, "the index's directory moved out of the root while it was opened")
	}
	return filepath.Join(dir, name), nil
}

// checkProtected refuses a database path whose database or sidecars would
// be a protected path or lie under one.
func checkProtected(roots []string, db string, protected capability.Protected) error {
	root, rel, err := atfile.Resolve(roots, db)
	if err != nil {
		return err
	}
	for _, suffix := range sidecars {
		if err := atfile.CheckBoth(roots, root, rel+suffix, protected.CheckWrite); err != nil {
			return err
		}
	}
	return nil
}
