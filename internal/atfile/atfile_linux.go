//go:build linux

package atfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
)

// OpenDir opens the host directory at the absolute path dir. Symlinks in
// dir are followed: the host names this path and is trusted with it.
func OpenDir(dir string) (*Dir, error) {
	if !filepath.IsAbs(dir) {
		return nil, fault.New(fault.InvalidInput, "path must be absolute")
	}
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, Fault(err, "directory")
	}
	return checkedDir(f, "directory")
}

// checkedDir makes a Dir of the directory f, refusing (and closing) it if
// it lies on a pseudo-filesystem.
func checkedDir(f *os.File, role string) (*Dir, error) {
	d := &Dir{f: f}
	st, err := Fstat(f)
	if err == nil {
		err = d.control(func(fd int) error { return checkFS(fd, role) })
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	d.dev = st.Dev
	return d, nil
}

// OpenDirIn opens the directory rel inside r. os.Root resolves rel, so
// no element can lead out of the root; an element in the staging
// namespace is refused.
func OpenDirIn(r *os.Root, rel string) (*Dir, error) {
	if HasStagingElement(rel) {
		return nil, Reserved(rel)
	}
	f, err := r.OpenFile(rel, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0)
	role := rel
	if rel == "." {
		role = "the directory"
	}
	if err != nil {
		return nil, Fault(err, role)
	}
	st, err := Fstat(f)
	if err == nil && checkedDev(r, st.Dev) {
		return &Dir{f: f, dev: st.Dev}, nil
	}
	return checkedDir(f, role)
}

// openSelfIn opens r's own directory; role names it in messages.
func openSelfIn(r *os.Root, role string) (*Dir, error) {
	f, err := r.OpenFile(".", os.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, Fault(err, role)
	}
	return checkedDir(f, role)
}

// control runs op with the directory's descriptor, retrying on EINTR.
func (d *Dir) control(op func(fd int) error) error {
	rc, err := d.f.SyscallConn()
	if err != nil {
		return fault.Wrap(fault.IO, err, "directory is not usable")
	}
	var opErr error
	if err := rc.Control(func(fd uintptr) {
		for {
			opErr = op(int(fd))
			if opErr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return fault.Wrap(fault.IO, err, "directory is not usable")
	}
	return opErr
}

// Lstat returns the metadata of name without following a symlink. An
// entry on another filesystem than d (a mount point) is refused if that
// filesystem is a pseudo-filesystem.
func (d *Dir) Lstat(name, role string) (Stat, error) {
	if err := checkName(name); err != nil {
		return Stat{}, err
	}
	st, err := d.lstat(name, role)
	if err == nil && st.Dev != d.dev {
		err = d.checkEntryFS(name, role)
	}
	if err != nil {
		return Stat{}, err
	}
	return st, nil
}

// lstat is Lstat without the checks.
func (d *Dir) lstat(name, role string) (Stat, error) {
	var st unix.Stat_t
	if err := d.control(func(fd int) error { return unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return Stat{}, Fault(&fs.PathError{Op: "fstatat", Path: name, Err: err}, role)
	}
	return fromSys(&st), nil
}

// OpenRegular opens name for reading. It refuses a symlink (denied) and
// anything but a regular file (invalid_input) before opening, so that no
// device's driver is ever asked to open, then opens it as OpenListed does
// and checks that what it opened is the file it looked at (a swap in
// between fails with integrity). role names the file in messages ("file",
// "source").
func (d *Dir) OpenRegular(name, role string) (*os.File, Stat, error) {
	before, err := d.Lstat(name, role)
	if err != nil {
		return nil, Stat{}, err
	}
	if !before.Mode.IsRegular() {
		return nil, Stat{}, NotRegular(role, before.Mode)
	}
	f, st, err := d.OpenListed(name, role)
	if err != nil {
		return nil, Stat{}, err
	}
	if st.Dev != before.Dev || st.Ino != before.Ino {
		f.Close()
		return nil, Stat{}, fault.Wrap(fault.Integrity, ErrChanged, "%s was replaced while it was being opened", role)
	}
	return f, st, nil
}

// OpenListed opens for reading a name that a directory listing has just
// shown as a regular file, without looking at it first: it opens with
// O_NOFOLLOW|O_NONBLOCK|O_NOCTTY, so a symlink is refused (denied) and a
// FIFO swapped in since the listing does not block, then checks with one
// fstat of the descriptor that it opened a regular file (anything else is
// closed unread: invalid_input). It does not cover a device node swapped
// in since the listing: that is opened (its driver's open runs) before it
// is refused, which needs a device node on the tree's own filesystem to
// rename into place. Named paths go through OpenRegular.
func (d *Dir) OpenListed(name, role string) (*os.File, Stat, error) {
	fd, st, err := d.openListed(name, role)
	if err != nil {
		return nil, Stat{}, err
	}
	return os.NewFile(uintptr(fd), name), st, nil
}

// OpenSubdir opens the directory name inside d without following a
// symlink, and returns it with its metadata. O_DIRECTORY refuses anything
// but a directory before it is opened, so no O_NONBLOCK is needed (and
// without it os.NewFile does not try to register the descriptor with the
// runtime's poller).
func (d *Dir) OpenSubdir(name, role string) (*Dir, Stat, error) {
	if err := checkName(name); err != nil {
		return nil, Stat{}, err
	}
	var fd int
	err := d.control(func(dfd int) (err error) {
		fd, err = openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) {
			if st, lerr := d.Lstat(name, role); lerr == nil {
				return nil, Stat{}, NotDir(role, st.Mode)
			}
		}
		return nil, Stat{}, Fault(&fs.PathError{Op: "openat", Path: name, Err: err}, role)
	}
	f := os.NewFile(uintptr(fd), name)
	st, err := Fstat(f)
	if err == nil && st.Dev != d.dev {
		err = checkFS(fd, role)
	}
	if err != nil {
		f.Close()
		return nil, Stat{}, err
	}
	return &Dir{f: f, dev: st.Dev}, st, nil
}

// createStaging creates a new, empty, private (0600) file under a fresh
// StagingName in d, for writing (and reading, with rdwr), and holds an
// exclusive flock on it until it is closed: the lock is how a sweep tells
// a live writer's staging file from a dead one's. It never opens an
// existing file.
func (d *Dir) createStaging(role string, rdwr bool) (*os.File, string, error) {
	mode := unix.O_WRONLY
	if rdwr {
		mode = unix.O_RDWR
	}
	for range 8 {
		name := StagingName(role)
		var fd int
		err := d.control(func(dfd int) (err error) {
			fd, err = unix.Openat(dfd, name, mode|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
			return err
		})
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, "", Fault(&fs.PathError{Op: "openat", Path: name, Err: err}, "staging file")
		}
		if err := ignoringEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) }); err != nil {
			// A sweep took the lock first: it removes the file.
			unix.Close(fd)
			continue
		}
		return os.NewFile(uintptr(fd), name), name, nil
	}
	return nil, "", fault.New(fault.IO, "could not create a staging file with a fresh name")
}

// remove removes the entry name from d; flags may be unix.AT_REMOVEDIR.
func (d *Dir) remove(name string, flags int) error {
	if err := d.control(func(fd int) error { return unix.Unlinkat(fd, name, flags) }); err != nil {
		return Fault(&fs.PathError{Op: "unlinkat", Path: name, Err: err}, "file")
	}
	return nil
}

// rename renames from to to inside d, replacing to if it exists (as
// rename(2) does, atomically).
func (d *Dir) rename(from, to string) error {
	if err := d.control(func(fd int) error { return unix.Renameat(fd, from, fd, to) }); err != nil {
		return Fault(&os.LinkError{Op: "renameat", Old: from, New: to, Err: err}, "destination")
	}
	return nil
}

// ReadNames returns the names in d, staging names left out, at most max
// of them: one more fails with fault.Limit rather than return a shorter
// list. Reading starts where the previous read of d stopped; call it once
// per opened directory.
func (d *Dir) ReadNames(max int) ([]string, error) {
	return d.readNames(max, false)
}

// readNames is ReadNames, with staging names too when staging is set.
func (d *Dir) readNames(max int, staging bool) ([]string, error) {
	var names []string
	for {
		batch, err := d.f.Readdirnames(256)
		for _, n := range batch {
			if staging || !IsStaging(n) {
				names = append(names, n)
			}
		}
		if len(names) > max {
			return nil, fault.LimitExceeded("directory entries", int64(max), 0)
		}
		if err == io.EOF {
			return names, nil
		}
		if err != nil {
			return nil, Fault(err, "directory")
		}
	}
}

// Fstat returns the metadata of an open file.
func Fstat(f *os.File) (Stat, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return Stat{}, fault.Wrap(fault.IO, err, "file is not usable")
	}
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil {
		return Stat{}, fault.Wrap(fault.IO, err, "file is not usable")
	}
	if serr != nil {
		return Stat{}, fault.Wrap(fault.IO, &fs.PathError{Op: "fstat", Path: f.Name(), Err: serr}, "reading file metadata failed")
	}
	return fromSys(&st), nil
}

func fromSys(st *unix.Stat_t) Stat {
	m := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFREG:
	default:
		m |= fs.ModeIrregular
	}
	if st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return Stat{
		Uid:        st.Uid,
		Gid:        st.Gid,
		Dev:        uint64(st.Dev),
		Ino:        st.Ino,
		Mode:       m,
		Nlink:      uint64(st.Nlink),
		Size:       st.Size,
		ModTime:    time.Unix(st.Mtim.Unix()),
		ChangeTime: time.Unix(st.Ctim.Unix()),
	}
}
