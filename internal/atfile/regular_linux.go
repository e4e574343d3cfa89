//go:build linux

package atfile

import (
	"io"
	"io/fs"

	"golang.org/x/sys/unix"
)

// Regular is a regular file open for reading on a bare descriptor: no
// *os.File, so opening it costs no fcntl and no registration with the
// runtime's poller (a regular file never waits), and reading it is one
// pread per call. It is for one goroutine at a time, and nothing closes
// it but Close.
type Regular struct {
	fd   int
	name string
	off  int64 // of Read
}

// OpenListedFD is OpenListed on a bare descriptor, with the same checks
// and guarantees: O_NOFOLLOW|O_NONBLOCK|O_NOCTTY, a regular file only
// (checked by fstat of the descriptor), no staging name, nothing on a
// pseudo-filesystem. The Regular is a value, so that a caller can keep it
// inside its own file type (one allocation per file opened, not two); it
// is used through its address.
func (d *Dir) OpenListedFD(name, role string) (Regular, Stat, error) {
	fd, st, err := d.openListed(name, role)
	if err != nil {
		return Regular{fd: -1}, Stat{}, err
	}
	return Regular{fd: fd, name: name}, st, nil
}

// openListed opens name as OpenListed documents and returns the
// descriptor with its metadata; on failure nothing stays open.
func (d *Dir) openListed(name, role string) (int, Stat, error) {
	if err := checkName(name); err != nil {
		return -1, Stat{}, err
	}
	var fd int
	err := d.control(func(dfd int) (err error) {
		fd, err = openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, Stat{}, Fault(&fs.PathError{Op: "openat", Path: name, Err: err}, role)
	}
	var sys unix.Stat_t
	err = ignoringEINTR(func() error { return unix.Fstat(fd, &sys) })
	if err != nil {
		unix.Close(fd)
		return -1, Stat{}, Fault(&fs.PathError{Op: "fstat", Path: name, Err: err}, role)
	}
	st := fromSys(&sys)
	switch {
	case !st.Mode.IsRegular():
		err = NotRegular(role, st.Mode)
	case st.Dev != d.dev:
		err = checkFS(fd, role)
	}
	if err != nil {
		unix.Close(fd)
		return -1, Stat{}, err
	}
	return fd, st, nil
}

// ReadAt reads len(b) bytes at off, or fewer with io.EOF at the end.
func (r *Regular) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "pread", Path: r.name, Err: unix.EINVAL}
	}
	n := 0
	for n < len(b) {
		m, err := unix.Pread(r.fd, b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, &fs.PathError{Op: "pread", Path: r.name, Err: err}
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}

// Read reads from where the last Read stopped.
func (r *Regular) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	err := ignoringEINTR(func() (err error) {
		n, err = unix.Pread(r.fd, b, r.off)
		return err
	})
	if err != nil {
		return 0, &fs.PathError{Op: "pread", Path: r.name, Err: err}
	}
	if n == 0 {
		return 0, io.EOF
	}
	r.off += int64(n)
	return n, nil
}

// Close closes the descriptor; a second Close fails.
func (r *Regular) Close() error {
	if r.fd < 0 {
		return &fs.PathError{Op: "close", Path: r.name, Err: fs.ErrClosed}
	}
	fd := r.fd
	r.fd = -1
	if err := unix.Close(fd); err != nil {
		return &fs.PathError{Op: "close", Path: r.name, Err: err}
	}
	return nil
}
