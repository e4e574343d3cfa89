package local

import (
	"context"
	"errors"
	"os"
	"path"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/atfile"
)

var _ files.DirMaker = (*Provider)(nil)

// MakeDir creates name and its missing parents through the root's os.Root,
// so no element of it leads out of the root.
func (p *Provider) MakeDir(ctx context.Context, root, name string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fault.As(err)
	}
	if err := checkName(name); err != nil {
		return false, err
	}
	r, release, err := p.root(root)
	if err != nil {
		return false, err
	}
	defer release()
	if err := atfile.CheckBoth([]string{root}, root, name, p.protected.CheckWrite); err != nil {
		return false, err
	}
	fi, err := r.Lstat(name)
	switch {
	case err == nil && fi.IsDir():
		return false, nil
	case err == nil:
		return false, fault.New(fault.InvalidInput, "%s exists and is not a directory", name)
	case !errors.Is(err, os.ErrNotExist):
		return false, atfile.Fault(err, name)
	}
	if err := checkAncestor(r, name); err != nil {
		return false, err
	}
	if err := r.MkdirAll(name, 0o755); err != nil {
		return false, atfile.Fault(err, name)
	}
	return true, nil
}

// checkAncestor refuses a directory to be made on a pseudo-filesystem (a
// mkdir in cgroupfs creates a control group): its deepest existing
// ancestor is opened through atfile, which checks the filesystem type.
func checkAncestor(r *os.Root, name string) error {
	for dir := path.Dir(name); ; dir = path.Dir(dir) {
		d, err := atfile.OpenDirIn(r, dir)
		if err == nil {
			return d.Close()
		}
		if fault.CodeOf(err) != fault.NotFound || dir == "." {
			return err
		}
	}
}
