//go:build linux

package atfile

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Mkdir makes the directory name in d with mode's permission bits and
// reports whether it made it: an existing entry of that name is no
// error (whoever opens it next learns what it is). role names it in
// messages.
func (d *Dir) Mkdir(name string, mode fs.FileMode, role string) (made bool, err error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	err = d.control(func(fd int) error { return unix.Mkdirat(fd, name, uint32(mode.Perm())) })
	switch {
	case errors.Is(err, unix.EEXIST):
		return false, nil
	case err != nil:
		return false, Fault(&fs.PathError{Op: "mkdirat", Path: name, Err: err}, role)
	}
	return true, nil
}

// OpenFile opens name in d with flag (os.O_RDWR, os.O_CREATE...) and,
// for a file it creates, perm, never following a symlink and never
// blocking on a FIFO (O_NOFOLLOW|O_NONBLOCK|O_NOCTTY are added). It
// checks nothing about what it opened: the caller does. role names the
// file in messages.
func (d *Dir) OpenFile(name string, flag int, perm fs.FileMode, role string) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	var fd int
	err := d.control(func(dfd int) (err error) {
		fd, err = unix.Openat(dfd, name, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, uint32(perm.Perm()))
		return err
	})
	if err != nil {
		return nil, Fault(&fs.PathError{Op: "openat", Path: name, Err: err}, role)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// RemoveStaging removes the staging entry name of d (see StagingPrefix)
// and everything below it, never following a symlink, within
// limits.TreeHardDepth and limits.TreeHardEntries. It is for a staging
// tree its own writer abandons; it refuses any other name.
func (d *Dir) RemoveStaging(name string) error {
	if err := checkElement(name); err != nil {
		return err
	}
	if !IsStaging(name) {
		return fault.New(fault.Internal, "atfile: %q is not a staging name", name)
	}
	st, err := d.lstat(name, "staging entry")
	switch {
	case fault.CodeOf(err) == fault.NotFound:
		return nil
	case err != nil:
		return err
	case st.Mode.IsDir():
		budget := limits.TreeHardEntries
		return d.removeTree(name, 0, &budget)
	}
	return d.remove(name, 0)
}
