//go:build linux

package atfile

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// RemoveAll removes the host path and everything beneath it, whatever
// modes a command left there: a directory missing its owner's read,
// write or search permission gets them back before it is entered
// (os.RemoveAll fails there, as on a Go module cache, whose directories
// are read-only). It never follows a symbolic link, never descends into
// another filesystem mounted beneath path (that fails, leaving it), and
// visits at most limits.TreeHardEntries names, limits.TreeHardDepth deep
// (limit past either, what was removed so far gone). A missing path is
// no error. It is for trees capkit itself owns (run caches, scratch
// space), which nothing writes while they are removed.
func RemoveAll(ctx context.Context, path string) error {
	_, err := walkTree(ctx, path, true)
	return err
}

// Usage is the disk space the tree at the host path takes: the allocated
// blocks of every entry beneath it and its own. It walks as RemoveAll
// does, giving a directory back its owner's read and search permission
// where they are missing, so that nothing written beneath it goes
// uncounted. A missing path takes nothing.
func Usage(ctx context.Context, path string) (int64, error) {
	return walkTree(ctx, path, false)
}

// tree is one walk: the device it stays on, and the names it may visit.
type tree struct {
	ctx    context.Context
	remove bool
	dev    uint64
	left   int
}

func walkTree(ctx context.Context, path string, remove bool) (int64, error) {
	parent, name, err := SplitParent(path)
	if err != nil {
		return 0, err
	}
	pfd, err := unix.Open(parent, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return 0, nil
	}
	if err != nil {
		return 0, Fault(err, path)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return 0, nil
		}
		return 0, Fault(err, path)
	}
	t := &tree{ctx: ctx, remove: remove, dev: st.Dev, left: limits.TreeHardEntries}
	return t.entry(pfd, name, &st, 0)
}

// entry counts (and removes) the entry name of the directory dfd.
func (t *tree) entry(dfd int, name string, st *unix.Stat_t, depth int) (int64, error) {
	size := st.Blocks * 512
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		n, err := t.dir(dfd, name, st, depth)
		size += n
		if err != nil {
			return size, err
		}
	}
	if !t.remove {
		return size, nil
	}
	flags := 0
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		flags = unix.AT_REMOVEDIR
	}
	if err := unix.Unlinkat(dfd, name, flags); err != nil && !errors.Is(err, unix.ENOENT) {
		return size, Fault(err, name)
	}
	return size, nil
}

// dir walks the directory name of dfd, giving it back its owner's
// rights first where the walk needs them.
func (t *tree) dir(dfd int, name string, st *unix.Stat_t, depth int) (int64, error) {
	if depth > limits.TreeHardDepth {
		return 0, fault.New(fault.Limit, "the tree is deeper than %d levels (the limit)", limits.TreeHardDepth)
	}
	if st.Dev != t.dev {
		return 0, fault.New(fault.Denied, "%s is another filesystem mounted in the tree; it is left as it is", name).By("mounts")
	}
	if err := t.ctx.Err(); err != nil {
		return 0, fault.Wrap(fault.Limit, err, "the walk of the tree was stopped")
	}
	path, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, Fault(err, name)
	}
	defer unix.Close(path)
	need := uint32(0o500)
	if t.remove {
		need = 0o700
	}
	if st.Mode&need != need {
		if err := fchmodPath(path, st.Mode&0o7777|need); err != nil {
			return 0, Fault(err, name)
		}
	}
	fd, err := unix.Openat(path, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, Fault(err, name)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var size int64
	for {
		names, err := f.Readdirnames(256)
		if len(names) > t.left {
			return size, fault.New(fault.Limit, "the tree has more than %d entries (the limit)", limits.TreeHardEntries)
		}
		t.left -= len(names)
		for _, n := range names {
			var sub unix.Stat_t
			if err := unix.Fstatat(fd, n, &sub, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				return size, Fault(err, n)
			}
			s, err := t.entry(fd, n, &sub, depth+1)
			size += s
			if err != nil {
				return size, err
			}
		}
		if errors.Is(err, io.EOF) {
			return size, nil
		}
		if err != nil {
			return size, Fault(err, name)
		}
	}
}

// fchmodPath changes the mode of the directory an O_PATH descriptor
// holds: fchmodat2 on the descriptor itself, or, on kernels before it,
// through its /proc/self/fd link (which names the inode, not a path
// that could be swapped).
func fchmodPath(fd int, mode uint32) error {
	err := unix.Fchmodat(fd, "", mode, unix.AT_EMPTY_PATH)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		err = unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode)
	}
	return err
}
