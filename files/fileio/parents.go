package fileio

import (
	"errors"
	"io/fs"
	"path"
	"syscall"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/atfile"
)

// makeParents creates the missing parent directories of the caller's path
// p inside roots, as write_file does (atfile.MakeDirs: no element leads
// out of the root or into a protected path). Staging names are refused.
func makeParents(roots []string, p string, protected capability.Protected) error {
	r, root, rel, err := atfile.ResolveRoot(roots, p)
	if err != nil {
		return err
	}
	defer r.Close()
	dir := path.Dir(rel)
	if dir == "." {
		return nil
	}
	if files.IsTempName(dir) {
		return fault.New(fault.Denied, "the destination's directory uses a reserved staging name (%s)", files.TempPrefix)
	}
	d, _, err := atfile.MakeDirs(r, roots, root, dir, 0o755, protected.CheckWrite)
	if err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTDIR) {
			return fault.New(fault.InvalidInput, "an element of the destination's directory is not a directory")
		}
		return err
	}
	return d.Close()
}
