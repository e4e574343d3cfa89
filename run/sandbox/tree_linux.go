package sandbox

import (
	"errors"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/limits"
)

// Trees a command left (a private tmp in reduced containment, an entry at
// a protected name) are walked, copied and removed here through
// descriptors, never following a symbolic link and never opening
// anything but directories and regular files, whatever modes the command
// gave them: it ran as this user, so the owner's permissions it took away
// are given back where a walk needs them. os.RemoveAll stops at a
// directory it cannot read (chmod 000), and no maintained module removes
// a tree whatever its modes, hence these few calls.

// openDir opens the directory name in parent for reading, without
// following a symbolic link. With keep (the tree stays), one whose owner
// cannot read and search it is given its owner's permissions for the
// open, then its own back; without (the tree is being removed), its
// owner is given read, write and search permission on it for good.
func openDir(parent int, name string, keep bool) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(parent, name, flags, 0)
	if err == nil && !keep {
		var st unix.Stat_t
		if err = unix.Fstat(fd, &st); err == nil && st.Mode&0o700 != 0o700 {
			err = unix.Fchmod(fd, st.Mode&0o7777|0o700)
		}
		if err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	if !errors.Is(err, unix.EACCES) {
		return fd, err
	}
	at, err := unix.Openat(parent, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(at)
	var st unix.Stat_t
	if err := unix.Fstat(at, &st); err != nil {
		return -1, err
	}
	// An O_PATH descriptor cannot be fchmod'ed; its /proc link names the
	// directory it holds, whatever is at name by now.
	self := "/proc/self/fd/" + strconv.Itoa(at)
	if err := unix.Chmod(self, st.Mode&0o7777|0o700); err != nil {
		return -1, err
	}
	fd, err = unix.Openat(at, ".", flags, 0)
	if keep {
		unix.Chmod(self, st.Mode&0o7777)
	}
	return fd, err
}

// openFile opens the regular file name in parent for reading, without
// following a symbolic link or blocking on a FIFO; one its owner cannot
// read is given its owner's read permission first (it is being removed).
func openFile(parent int, name string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	fd, err := unix.Openat(parent, name, flags, 0)
	if !errors.Is(err, unix.EACCES) {
		return fd, err
	}
	at, err := unix.Openat(parent, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(at)
	var st unix.Stat_t
	if err := unix.Fstat(at, &st); err != nil {
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return -1, unix.EACCES
	}
	self := "/proc/self/fd/" + strconv.Itoa(at)
	if err := unix.Chmod(self, st.Mode&0o7777|0o400); err != nil {
		return -1, err
	}
	// The /proc link is the file held, not a name looked up again.
	return unix.Open(self, flags&^unix.O_NOFOLLOW, 0)
}

// eachName calls fn with every name in the directory dir, a batch at a
// time (fn may remove the names it is given), reading from the start
// however far dir was read before.
func eachName(dir int, fn func(name string) error) error {
	// A duplicate shares dir's offset (a new open of "." would need the
	// read permission dir was opened with, which may be gone).
	d, err := unix.Dup(dir)
	if err != nil {
		return err
	}
	if _, err := unix.Seek(d, 0, io.SeekStart); err != nil {
		unix.Close(d)
		return err
	}
	f := os.NewFile(uintptr(d), "dir")
	defer f.Close()
	for {
		names, err := f.Readdirnames(256)
		for _, n := range names {
			if err := fn(n); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// removeAll removes the entry name of parent and, for a directory,
// everything in it, whatever modes it holds.
func removeAll(parent int, name string) error {
	err := unix.Unlinkat(parent, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) {
		return err
	}
	top, err := openDir(parent, name, false)
	if err != nil {
		return err
	}
	defer unix.Close(top)
	// Each pass empties the tree down to limits.RunTreeDepth and moves
	// what lies deeper up to its top, where the next pass takes it.
	r := &remover{top: top}
	for {
		moved, err := r.empty(top, 0)
		if err != nil {
			return err
		}
		if !moved {
			break
		}
	}
	return unix.Unlinkat(parent, name, unix.AT_REMOVEDIR)
}

// remover empties one tree: top is its directory, moved counts the
// directories moved up to it.
type remover struct {
	top, moved int
}

// empty removes everything in dir, depth directories below the top; a
// directory at limits.RunTreeDepth is moved to the top instead, and
// moved says one was.
func (r *remover) empty(dir, depth int) (moved bool, err error) {
	err = eachName(dir, func(name string) error {
		err := unix.Unlinkat(dir, name, 0)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EISDIR) {
			return err
		}
		if depth+1 >= limits.RunTreeDepth {
			moved = true
			r.moved++
			return unix.Renameat2(dir, name, r.top, ".deep-"+strconv.Itoa(r.moved), unix.RENAME_NOREPLACE)
		}
		sub, err := openDir(dir, name, false)
		if err != nil {
			return err
		}
		m, err := r.empty(sub, depth+1)
		unix.Close(sub)
		moved = moved || m
		if err != nil {
			return err
		}
		if m {
			return nil // emptied on a later pass
		}
		return unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
	})
	return moved, err
}

// usage is what a tree holds: bytes allocated and entries.
type usage struct{ bytes, entries int64 }

// measure adds to u what the directory dir holds, down to
// limits.RunTreeDepth below it, stopping once u passes max (the caller
// only asks whether it does). A directory it cannot read is not counted:
// measuring never changes the tree.
func measure(dir int, depth int, u *usage, max usage) error {
	return eachName(dir, func(name string) error {
		if u.bytes > max.bytes || u.entries > max.entries {
			return nil
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil // gone meanwhile
		}
		u.entries++
		u.bytes += st.Blocks * 512
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || depth+1 >= limits.RunTreeDepth {
			return nil
		}
		sub, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil
		}
		defer unix.Close(sub)
		return measure(sub, depth+1, u, max)
	})
}

// copyBudget is what a copy may still take, and what it left out.
type copyBudget struct {
	bytes, entries int64
	skipped        int64 // entries not copied: past the bound, or special files
}

// copyTree copies the entry name of src to the new entry to of dst:
// directories, regular files (at most the budget's bytes in all) and
// symbolic links as links; FIFOs, sockets and devices are never opened
// and only counted as skipped, as is whatever lies past the budget.
func copyTree(src int, name string, dst int, to string, b *copyBudget, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(src, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if b.entries <= 0 || depth >= limits.RunTreeDepth {
		b.skipped++
		return nil
	}
	b.entries--
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return copyDir(src, name, dst, to, b, depth)
	case unix.S_IFREG:
		return copyFile(src, name, dst, to, st.Mode&0o777, b)
	case unix.S_IFLNK:
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(src, name, buf)
		if err != nil {
			return err
		}
		return unix.Symlinkat(string(buf[:n]), dst, to)
	}
	b.skipped++
	return nil
}

func copyDir(src int, name string, dst int, to string, b *copyBudget, depth int) error {
	if err := unix.Mkdirat(dst, to, 0o700); err != nil {
		return err
	}
	from, err := openDir(src, name, false)
	if err != nil {
		return err
	}
	defer unix.Close(from)
	into, err := unix.Openat(dst, to, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(into)
	return eachName(from, func(n string) error { return copyTree(from, n, into, n, b, depth+1) })
}

func copyFile(src int, name string, dst int, to string, mode uint32, b *copyBudget) error {
	in, err := openFile(src, name)
	if err != nil {
		return err
	}
	fin := os.NewFile(uintptr(in), name)
	defer fin.Close()
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		b.skipped++ // replaced meanwhile
		return err
	}
	out, err := unix.Openat(dst, to, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode|0o600)
	if err != nil {
		return err
	}
	fout := os.NewFile(uintptr(out), to)
	defer fout.Close()
	n, err := io.Copy(fout, io.LimitReader(fin, max(b.bytes, 0)))
	b.bytes -= n
	if err == nil && n < st.Size {
		b.skipped++ // cut at the bound
	}
	return err
}
