package local

import (
	"context"
	"errors"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
)

// Move renames from to to inside one root without ever replacing an
// existing to, creating to's missing parent directories. Regular files and
// directories move; symlinks and special files are refused. Both
// directories are opened through the root and the rename is relative to
// them, then both are fsynced.
func (p *Provider) Move(ctx context.Context, root, from, to string) error {
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
	r, err := p.root(root)
	if err != nil {
		return err
	}
	fromDir, fromBase := split(from)
	toDir, toBase := split(to)
	src, err := openDir(r, fromDir, false)
	if err != nil {
		return err
	}
	defer src.close()
	st, ok, err := src.lstat(fromBase)
	if err != nil {
		return atfile.Fault(&os.PathError{Op: "fstatat", Path: from, Err: err}, from)
	}
	if !ok {
		return fault.New(fault.NotFound, "%s: not found", from)
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFDIR {
		m := modeOf(&st)
		if m&os.ModeSymlink != 0 {
			return fault.New(fault.InvalidInput, "%s: is a symbolic link; only regular files and directories can be moved", from)
		}
		return atfile.NotRegular(from, m)
	}
	dst, err := openDir(r, toDir, true)
	if err != nil {
		return err
	}
	defer dst.close()
	if err := ctx.Err(); err != nil {
		return fault.As(err)
	}
	if err := renameNoReplace(src.fd, fromBase, dst.fd, toBase); err != nil {
		switch {
		case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOTEMPTY):
			return fault.New(fault.Conflict, "%s: already exists; move_file never replaces anything", to)
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EINVAL), errors.Is(err, errNoReplace):
			return fault.Wrap(fault.Unavailable, err, "this filesystem cannot rename without replacing (renameat2 RENAME_NOREPLACE); nothing was moved")
		case errors.Is(err, unix.EXDEV):
			return fault.Wrap(fault.Unavailable, err, "source and destination are on different filesystems; nothing was moved")
		}
		return atfile.Fault(&os.PathError{Op: "renameat2", Path: from, Err: err}, from)
	}
	if err := src.f.Sync(); err != nil {
		return fault.Wrap(fault.IO, err, "moved, but syncing a directory failed")
	}
	if err := dst.f.Sync(); err != nil {
		return fault.Wrap(fault.IO, err, "moved, but syncing a directory failed")
	}
	return nil
}

func split(name string) (dir, base string) {
	dir, base = path.Split(name)
	if dir == "" {
		dir = "."
	}
	return dir, base
}
