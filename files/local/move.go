package local

import (
	"context"
	"io/fs"
	"strings"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
)

// Move renames from to to inside one root without ever replacing an
// existing to, creating to's missing parent directories
// (scope.Target.RenameTo: renameat2 RENAME_NOREPLACE relative to both
// directories, both fsynced). Regular files and directories move;
// symlinks and special files are refused.
func (p *Provider) Move(ctx context.Context, from, to *scope.Target) error {
	if err := checkMove(ctx, from.Name(), to.Name()); err != nil {
		return err
	}
	st, err := from.Lstat(from.Name())
	if err != nil {
		return err
	}
	if !st.Mode.IsRegular() && !st.Mode.IsDir() {
		if st.Mode&fs.ModeSymlink != 0 {
			return fault.New(fault.InvalidInput, "%s: is a symbolic link; only regular files and directories can be moved", from.Name())
		}
		return scope.NotRegular(from.Name(), st.Mode)
	}
	err = from.RenameTo(ctx, to, &scope.RenameOptions{MakeParents: true})
	if fault.CodeOf(err) == fault.Conflict {
		return fault.New(fault.Conflict, "%s: already exists; move_file never replaces anything", to.Name())
	}
	return err
}

// checkMove refuses what no move may do, before anything is opened.
func checkMove(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return fault.As(err)
	}
	for _, n := range []string{from, to} {
		if n == "." {
			return fault.New(fault.InvalidInput, "the root itself cannot be moved or replaced")
		}
	}
	if from == to {
		return fault.New(fault.InvalidInput, "source and destination are the same path")
	}
	if strings.HasPrefix(to, from+"/") {
		return fault.New(fault.InvalidInput, "%s: cannot move a directory into itself", from)
	}
	return nil
}
