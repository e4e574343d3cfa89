package local

import (
	"context"
	"errors"
	"os"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/atfile"
)

var _ files.DirMaker = (*Provider)(nil)

// MakeDir creates name and its missing parents with atfile.MakeDirs, so no
// element of it leads out of the root, onto a pseudo-filesystem (a mkdir
// in cgroupfs creates a control group) or into a protected path.
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
	fi, err := r.Lstat(name)
	switch {
	case err == nil && fi.IsDir():
		return false, nil
	case err == nil:
		return false, fault.New(fault.InvalidInput, "%s exists and is not a directory", name)
	case !errors.Is(err, os.ErrNotExist):
		return false, atfile.Fault(err, name)
	}
	d, made, err := atfile.MakeDirs(r, []string{root}, root, name, 0o755, p.protected.CheckWrite)
	if err != nil {
		return false, err
	}
	return made, d.Close()
}
