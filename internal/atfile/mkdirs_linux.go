package atfile

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// MakeDirs makes the directory rel (root-relative, cleaned) and its
// missing parents inside r, the root at root (one of roots), and returns it open, with
// whether it made any. The deepest existing directory is opened through r (which
// follows a symlink inside the root); each missing one is then made with
// mkdirat in its parent's descriptor once check allows it by the name
// that parent has on disk (CheckOpened), and opened without following a
// symlink, so neither a symlink nor a directory swapped for one leads a
// new directory into a protected path.
func MakeDirs(r *os.Root, roots []string, root, rel string, mode fs.FileMode, check ProtectedCheck) (_ *Dir, made bool, err error) {
	have := rel
	d, err := OpenDirIn(r, have)
	for errors.Is(err, fs.ErrNotExist) && have != "." {
		have = path.Dir(have)
		d, err = OpenDirIn(r, have)
	}
	if err != nil {
		return nil, false, err
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if have == rel {
		return d, false, nil
	}
	rest := rel
	if have != "." {
		rest = rel[len(have)+1:]
	}
	name := have
	for _, e := range strings.Split(rest, "/") {
		name = path.Join(name, e)
		if err = CheckOpened(roots, root, d, e, name, check); err != nil {
			return nil, made, err
		}
		merr := d.control(func(dfd int) error { return unix.Mkdirat(dfd, e, uint32(mode.Perm())) })
		if merr != nil && !errors.Is(merr, unix.EEXIST) {
			err = Fault(&fs.PathError{Op: "mkdirat", Path: name, Err: merr}, name)
			return nil, made, err
		}
		made = made || merr == nil
		var sub *Dir
		if sub, _, err = d.OpenSubdir(e, name); err != nil {
			return nil, made, err
		}
		d.Close()
		d = sub
	}
	return d, made, nil
}
