package local

import (
	"context"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/scope"
)

var _ files.DirMaker = (*Provider)(nil)

// MakeDir creates the directory t names and its missing parents
// (scope.Target.MakeDirs), so no element of it leads out of the root,
// onto a pseudo-filesystem (a mkdir in cgroupfs creates a control group)
// or into a protected path.
func (p *Provider) MakeDir(ctx context.Context, t *scope.Target) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fault.As(err)
	}
	st, err := t.Lstat(t.Name())
	switch {
	case err == nil && st.Mode.IsDir():
		return false, nil
	case err == nil:
		return false, fault.New(fault.InvalidInput, "%s exists and is not a directory", t.Name())
	case fault.CodeOf(err) != fault.NotFound:
		return false, err
	}
	return t.MakeDirs(0o755)
}
