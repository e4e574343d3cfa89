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

// MakeDir creates name and its missing parents through the root's os.Root,
// so no element of it leads out of the root.
func (p *Provider) MakeDir(ctx context.Context, root, name string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fault.As(err)
	}
	if err := checkName(name); err != nil {
		return false, err
	}
	r, err := p.root(root)
	if err != nil {
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
	if err := r.MkdirAll(name, 0o755); err != nil {
		return false, atfile.Fault(err, name)
	}
	return true, nil
}
