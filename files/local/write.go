package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/atfile"
)

// newFileMode is the mode of a file Write creates.
const newFileMode = 0o644

// dirHandle is a directory opened once through the root: every later step
// of a mutation is relative to its descriptor, so nothing can redirect it.
type dirHandle struct {
	f  *os.File
	fd int
}

func (d *dirHandle) close() { d.f.Close() }

// openDir opens the directory dir (root-relative) through r, creating it
// and its missing parents inside the root when create is set.
func openDir(r *os.Root, dir string, create bool) (*dirHandle, error) {
	// O_DIRECTORY: a FIFO or device in its place fails at once, unopened.
	const flags = os.O_RDONLY | unix.O_DIRECTORY | unix.O_NONBLOCK
	f, err := r.OpenFile(dir, flags, 0)
	if err != nil && create && errors.Is(err, os.ErrNotExist) {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return nil, atfile.Fault(err, dir)
		}
		f, err = r.OpenFile(dir, flags, 0)
	}
	if err != nil {
		if fi, serr := r.Stat(dir); serr == nil && !fi.IsDir() {
			return nil, fault.New(fault.InvalidInput, "%s: is not a directory", dir)
		}
		return nil, atfile.Fault(err, dir)
	}
	return &dirHandle{f: f, fd: int(f.Fd())}, nil
}

func (d *dirHandle) key(name string) (lockKey, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return lockKey{}, err
	}
	return lockKey{dev: uint64(st.Dev), ino: uint64(st.Ino), name: name}, nil
}

// lstat describes name in d without following a symlink; ok is false when
// it does not exist.
func (d *dirHandle) lstat(name string) (st unix.Stat_t, ok bool, err error) {
	err = ignoringEINTR(func() error { return unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	if errors.Is(err, unix.ENOENT) {
		return st, false, nil
	}
	return st, err == nil, err
}

// version reads the regular file name in d, never following a symlink or
// blocking on anything else, and returns its version.
func (d *dirHandle) version(ctx context.Context, name, display string) (files.Version, error) {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return files.Version{}, atfile.Fault(&os.PathError{Op: "openat", Path: display, Err: err}, display)
	}
	f := os.NewFile(uintptr(fd), display)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return files.Version{}, atfile.Fault(err, display)
	}
	if !fi.Mode().IsRegular() {
		return files.Version{}, atfile.NotRegular(display, fi.Mode())
	}
	h := files.NewVersionHash()
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			return h.Version(), nil
		}
		if err != nil {
			return files.Version{}, atfile.Fault(err, display)
		}
		if err := ctx.Err(); err != nil {
			return files.Version{}, fault.As(err)
		}
	}
}

func modeOf(st *unix.Stat_t) os.FileMode {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return os.ModeDir
	case unix.S_IFLNK:
		return os.ModeSymlink
	case unix.S_IFIFO:
		return os.ModeNamedPipe
	case unix.S_IFSOCK:
		return os.ModeSocket
	case unix.S_IFCHR:
		return os.ModeDevice | os.ModeCharDevice
	}
	return os.ModeDevice
}

// Write atomically creates or replaces name with data. See the package
// comment for what it guarantees.
func (p *Provider) Write(ctx context.Context, root, name string, data []byte, opts *files.WriteOptions) (files.Version, error) {
	if err := ctx.Err(); err != nil {
		return files.Version{}, fault.As(err)
	}
	if err := checkName(name); err != nil {
		return files.Version{}, err
	}
	if name == "." {
		return files.Version{}, fault.New(fault.InvalidInput, "the root itself is a directory, not a file")
	}
	var o files.WriteOptions
	if opts != nil {
		o = *opts
	}
	r, err := p.root(root)
	if err != nil {
		return files.Version{}, err
	}
	dirName, base := path.Split(name)
	if dirName == "" {
		dirName = "."
	}
	d, err := openDir(r, dirName, true)
	if err != nil {
		return files.Version{}, err
	}
	defer d.close()
	key, err := d.key(base)
	if err != nil {
		return files.Version{}, atfile.Fault(err, name)
	}
	unlock := p.locks.lock(key)
	defer unlock()

	st, exists, err := d.lstat(base)
	if err != nil {
		return files.Version{}, atfile.Fault(&os.PathError{Op: "fstatat", Path: name, Err: err}, name)
	}
	if exists && st.Mode&unix.S_IFMT != unix.S_IFREG {
		return files.Version{}, atfile.NotRegular(name, modeOf(&st))
	}
	if o.Guard {
		switch {
		case o.Expect.IsZero() && exists:
			return files.Version{}, fault.New(fault.Conflict, "%s: already exists (it was created after this session looked); read it first, then write", name)
		case !o.Expect.IsZero() && !exists:
			return files.Version{}, fault.New(fault.Conflict, "%s: was deleted since this session read it; nothing was written", name)
		case !o.Expect.IsZero():
			cur := files.Version{}
			if st.Size == o.Expect.Size() {
				if cur, err = d.version(ctx, base, name); err != nil {
					return files.Version{}, err
				}
			}
			if cur != o.Expect {
				return files.Version{}, fault.New(fault.Conflict, "%s: changed since this session read it; read it again, then retry. Nothing was written", name)
			}
		}
	}
	mode := os.FileMode(newFileMode)
	if exists {
		mode = os.FileMode(st.Mode & 0o777)
	}
	tmp, err := d.stage(base, data, mode, exists, &st)
	if err != nil {
		return files.Version{}, atfile.Fault(err, name)
	}
	if err := ctx.Err(); err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return files.Version{}, fault.As(err)
	}
	if o.Guard && o.Expect.IsZero() {
		err = renameNoReplace(d.fd, tmp, d.fd, base)
	} else {
		err = ignoringEINTR(func() error { return unix.Renameat(d.fd, tmp, d.fd, base) })
	}
	if err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		if errors.Is(err, unix.EEXIST) {
			return files.Version{}, fault.New(fault.Conflict, "%s: already exists (it was created after this session looked); read it first, then write", name)
		}
		return files.Version{}, atfile.Fault(&os.PathError{Op: "renameat", Path: name, Err: err}, name)
	}
	if err := d.f.Sync(); err != nil {
		return files.Version{}, fault.Wrap(fault.IO, err, "%s: written, but syncing its directory failed", name)
	}
	return files.VersionOf(data), nil
}

// stage writes data to a new staging file in d, fsynced, with mode (and
// the old file's owner, where permitted), and returns its name.
func (d *dirHandle) stage(base string, data []byte, mode os.FileMode, exists bool, old *unix.Stat_t) (string, error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := files.TempPrefix + hex.EncodeToString(rnd[:])
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = unix.Openat(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		return err
	})
	if err != nil {
		return "", &os.PathError{Op: "openat", Path: base, Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	fail := func(err error) (string, error) {
		f.Close()
		unix.Unlinkat(d.fd, tmp, 0)
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if exists {
		// Best effort: only a privileged process may give a file away.
		_ = f.Chown(int(old.Uid), int(old.Gid))
	}
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return "", err
	}
	return tmp, nil
}

func ignoringEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}
