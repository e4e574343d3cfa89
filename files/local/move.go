package local

import (
	"context"
	"io/fs"
	"strings"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/internal/noreplace"
)

// Move renames from to to inside one root without ever replacing an
// existing to, creating to's missing parent directories. Regular files and
// directories move; symlinks and special files are refused. Both
// directories are opened through the root and the rename is relative to
// them (renameat2 RENAME_NOREPLACE), then both are fsynced.
func (p *Provider) Move(ctx context.Context, root, from, to string) error {
	if err := checkMove(ctx, from, to); err != nil {
		return err
	}
	r, release, err := p.root(root)
	if err != nil {
		return err
	}
	defer release()
	src, fromBase, err := openParent(r, from)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := atfile.CheckOpened([]string{root}, root, src, fromBase, from, p.protected.CheckRename); err != nil {
		return err
	}
	st, err := src.Lstat(fromBase, from)
	if err != nil {
		return err
	}
	if !st.Mode.IsRegular() && !st.Mode.IsDir() {
		if st.Mode&fs.ModeSymlink != 0 {
			return fault.New(fault.InvalidInput, "%s: is a symbolic link; only regular files and directories can be moved", from)
		}
		return atfile.NotRegular(from, st.Mode)
	}
	dst, toBase, err := p.makeParent(r, root, to)
	if err != nil {
		return err
	}
	defer dst.Close()
	if err := atfile.CheckOpened([]string{root}, root, dst, toBase, to, p.protected.CheckRename); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fault.As(err)
	}
	if err := noreplace.RenameBetween(src.File(), fromBase, dst.File(), toBase); err != nil {
		if fault.CodeOf(err) == fault.Conflict {
			return fault.New(fault.Conflict, "%s: already exists; move_file never replaces anything", to)
		}
		return err
	}
	if err := src.Sync(); err != nil {
		return fault.Wrap(fault.IO, err, "moved, but syncing a directory failed")
	}
	if err := dst.Sync(); err != nil {
		return fault.Wrap(fault.IO, err, "moved, but syncing a directory failed")
	}
	return nil
}

// checkMove refuses what no move may do, before anything is opened.
func checkMove(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return fault.As(err)
	}
	for _, n := range []string{from, to} {
		if err := checkName(n); err != nil {
			return err
		}
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
