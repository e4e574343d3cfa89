//go:build linux

package atfile

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// swept holds the directories (device, inode, birth time) this process
// has swept, so each is swept once: when the first writer starts in it.
// The birth time tells a new directory from a removed one whose inode it
// reuses (where the filesystem records it).
var swept = struct {
	sync.Mutex
	m map[[3]uint64]struct{}
}{m: map[[3]uint64]struct{}{}}

// sweepOnce removes d's stale staging entries if no writer of this
// process has started in d before. It is best effort: a leftover it
// cannot remove stays hidden, never served, until capkit clean.
func (d *Dir) sweepOnce(ctx context.Context) {
	st, err := Fstat(d.f)
	if err != nil {
		return
	}
	key := [3]uint64{st.Dev, st.Ino, birth(d.f)}
	swept.Lock()
	_, done := swept.m[key]
	if !done {
		if len(swept.m) >= limits.StagingSweptDirs {
			clear(swept.m)
		}
		swept.m[key] = struct{}{}
	}
	swept.Unlock()
	if !done {
		d.sweep(ctx)
	}
}

// birth is f's birth time in nanoseconds, 0 where it is not recorded.
func birth(f *os.File) uint64 {
	var x unix.Statx_t
	conn, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	var serr error
	if err := conn.Control(func(fd uintptr) {
		serr = unix.Statx(int(fd), "", unix.AT_EMPTY_PATH|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_BTIME, &x)
	}); err != nil || serr != nil || x.Mask&unix.STATX_BTIME == 0 {
		return 0
	}
	return uint64(x.Btime.Sec)*1e9 + uint64(x.Btime.Nsec)
}

// sweep removes the staging entries of d whose writer is gone and returns
// how many it removed. A directory with more than limits.WalkMaxFiles
// names is not swept (limit).
func (d *Dir) sweep(ctx context.Context) (int, error) {
	self, err := d.reopen()
	if err != nil {
		return 0, err
	}
	names, err := self.readNames(limits.WalkMaxFiles, true)
	self.Close()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return n, fault.As(err)
		}
		if !IsStaging(name) {
			continue
		}
		removed, err := d.removeIfStale(name)
		if err != nil {
			return n, err
		}
		if removed {
			n++
		}
	}
	return n, nil
}

// reopen opens d again, with a reading position of its own.
func (d *Dir) reopen() (*Dir, error) {
	var fd int
	err := d.control(func(dfd int) (err error) {
		fd, err = unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, Fault(err, "directory")
	}
	return &Dir{f: os.NewFile(uintptr(fd), "."), dev: d.dev}, nil
}

// removeIfStale removes the staging entry name of d unless its writer
// still holds its lock. Entries no capkit writer makes (a symlink, FIFO,
// device or socket with a staging name) are unlinked without being opened.
func (d *Dir) removeIfStale(name string) (bool, error) {
	return d.removeStale(name, nil, true)
}

// removeStale removes (with remove; else only reports) the staging entry
// name of d when its writer is gone and, with want, it is still the
// entry want describes (device and inode).
func (d *Dir) removeStale(name string, want *Stat, remove bool) (bool, error) {
	st, err := d.lstat(name, "staging file")
	if fault.CodeOf(err) == fault.NotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if want != nil && (st.Dev != want.Dev || st.Ino != want.Ino) {
		return false, nil
	}
	if !st.Mode.IsRegular() && !st.Mode.IsDir() {
		if !remove {
			return true, nil
		}
		return true, d.remove(name, 0)
	}
	var fd int
	err = d.control(func(dfd int) (err error) {
		fd, err = unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		return err
	})
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, Fault(&fs.PathError{Op: "openat", Path: name, Err: err}, "staging file")
	}
	defer unix.Close(fd)
	if err := ignoringEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) }); err != nil {
		return false, nil // a live writer holds it
	}
	var cur unix.Stat_t
	if unix.Fstat(fd, &cur) != nil || cur.Ino != st.Ino || uint64(cur.Dev) != st.Dev {
		return false, nil // renamed or replaced since the lstat
	}
	if !remove {
		return true, nil
	}
	if st.Mode.IsDir() {
		budget := limits.TreeHardEntries
		return true, d.removeTree(name, 0, &budget)
	}
	return true, d.remove(name, 0)
}

// StagingEntry is a staging entry and its metadata.
type StagingEntry struct {
	Name string
	Stat Stat
}

// StaleStaging lists the staging entries of d whose writer is gone (its
// lock is free), reading at most limits.WalkMaxFiles names (limit past
// them); it removes nothing: a caller that previews what it would remove
// removes each later with RemoveStale.
func (d *Dir) StaleStaging(ctx context.Context) ([]StagingEntry, error) {
	self, err := d.reopen()
	if err != nil {
		return nil, err
	}
	names, err := self.readNames(limits.WalkMaxFiles, true)
	self.Close()
	if err != nil {
		return nil, err
	}
	var out []StagingEntry
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, fault.As(err)
		}
		if !IsStaging(name) {
			continue
		}
		stale, err := d.removeStale(name, nil, false)
		if err != nil || !stale {
			if err != nil {
				return nil, err
			}
			continue
		}
		st, err := d.lstat(name, "staging entry")
		if err != nil {
			continue // gone meanwhile
		}
		out = append(out, StagingEntry{Name: name, Stat: st})
	}
	return out, nil
}

// RemoveStale removes the staging entry name of d (and everything below
// it) if its writer is still gone and it is still the entry st describes
// (device and inode), and reports whether it did.
func (d *Dir) RemoveStale(name string, st Stat) (bool, error) {
	if err := checkElement(name); err != nil || !IsStaging(name) {
		return false, fault.New(fault.Internal, "atfile: %q is not a staging name", name)
	}
	return d.removeStale(name, &st, true)
}

// removeTree removes the directory name of d and everything below it,
// never following a symlink, at most limits.TreeHardDepth deep and
// *budget names in all.
func (d *Dir) removeTree(name string, depth int, budget *int) error {
	if depth > limits.TreeHardDepth {
		return fault.New(fault.Limit, "a staging directory is deeper than %d levels; remove it by hand", limits.TreeHardDepth)
	}
	var fd int
	err := d.control(func(dfd int) (err error) {
		fd, err = unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return Fault(&fs.PathError{Op: "openat", Path: name, Err: err}, "staging directory")
	}
	sub := &Dir{f: os.NewFile(uintptr(fd), name)}
	defer sub.Close()
	names, err := sub.readNames(*budget, true)
	if err != nil {
		return err
	}
	*budget -= len(names)
	for _, n := range names {
		st, err := sub.lstat(n, "staged entry")
		if err == nil && st.Mode.IsDir() {
			err = sub.removeTree(n, depth+1, budget)
		} else if err == nil {
			err = sub.remove(n, 0)
		}
		if err != nil && fault.CodeOf(err) != fault.NotFound {
			return err
		}
	}
	return d.remove(name, unix.AT_REMOVEDIR)
}

// Clean removes every stale staging entry (its writer gone) in the tree
// below the host directory root and returns how many it removed. It never
// follows a symlink and does not descend into pseudo-filesystems; it
// visits at most limits.TreeHardEntries names, limits.TreeHardDepth deep
// (limit past either, with the count removed so far).
func Clean(ctx context.Context, root string) (int, error) {
	d, err := OpenDir(root)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	c := cleaner{left: limits.TreeHardEntries}
	err = c.clean(ctx, d, 0)
	return c.removed, err
}

type cleaner struct {
	removed, left int
}

func (c *cleaner) clean(ctx context.Context, d *Dir, depth int) error {
	if depth > limits.TreeHardDepth {
		return fault.New(fault.Limit, "the tree is deeper than %d levels (the limit)", limits.TreeHardDepth)
	}
	self, err := d.reopen()
	if err != nil {
		return err
	}
	names, err := self.readNames(c.left, true)
	self.Close()
	if err != nil {
		if fault.CodeOf(err) == fault.Limit {
			return fault.New(fault.Limit, "the tree has more than %d entries (the limit)", limits.TreeHardEntries)
		}
		return err
	}
	c.left -= len(names)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return fault.As(err)
		}
		if IsStaging(name) {
			removed, err := d.removeIfStale(name)
			if err != nil {
				return err
			}
			if removed {
				c.removed++
			}
			continue
		}
		if err := c.descend(ctx, d, name, depth); err != nil {
			return err
		}
	}
	return nil
}

// descend cleans the subdirectory name of d, if it is one: symlinks,
// files and pseudo-filesystems are passed over.
func (c *cleaner) descend(ctx context.Context, d *Dir, name string, depth int) error {
	st, err := d.lstat(name, "entry")
	if err != nil || !st.Mode.IsDir() {
		return nil
	}
	sub, _, err := d.OpenSubdir(name, "directory")
	switch {
	case errors.Is(err, ErrPseudoFS), fault.CodeOf(err) == fault.NotFound, errors.Is(err, ErrNotDir), errors.Is(err, ErrSymlink):
		return nil
	case err != nil:
		return err
	}
	defer sub.Close()
	return c.clean(ctx, sub, depth+1)
}

// MkdirStaging creates a new, private (0700) directory under a fresh
// StagingName in d, for a tree to be built and then renamed into place,
// and returns it open, with its name, holding an exclusive flock on it
// until it is closed (see createStaging); closing it does not remove it.
func (d *Dir) MkdirStaging(ctx context.Context, role string) (*Dir, string, error) {
	d.sweepOnce(ctx)
	for range 8 {
		name := StagingName(role)
		err := d.control(func(dfd int) error { return unix.Mkdirat(dfd, name, 0o700) })
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, "", Fault(&fs.PathError{Op: "mkdirat", Path: name, Err: err}, "staging directory")
		}
		var fd int
		err = d.control(func(dfd int) (err error) {
			fd, err = unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			return err
		})
		if err != nil {
			return nil, "", Fault(&fs.PathError{Op: "openat", Path: name, Err: err}, "staging directory")
		}
		if err := ignoringEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) }); err != nil {
			unix.Close(fd) // a sweep took it first: it removes it
			continue
		}
		return &Dir{f: os.NewFile(uintptr(fd), name), dev: d.dev}, name, nil
	}
	return nil, "", fault.New(fault.IO, "could not create a staging directory with a fresh name")
}
