//go:build linux

package noreplace

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
)

func renameNoReplace(fromDir *os.File, from string, toDir *os.File, to string) error {
	var rerr error
	err := control(fromDir, func(ffd int) error {
		return control(toDir, func(tfd int) error {
			for {
				rerr = unix.Renameat2(ffd, from, tfd, to, unix.RENAME_NOREPLACE)
				if rerr != unix.EINTR {
					return nil
				}
			}
		})
	})
	if err != nil {
		return fault.Wrap(fault.IO, err, "publishing failed")
	}
	switch {
	case rerr == nil:
		return nil
	case errors.Is(rerr, unix.EEXIST), errors.Is(rerr, unix.ENOTEMPTY):
		return fault.Wrap(fault.Conflict, rerr, "the destination already exists; nothing was replaced")
	case errors.Is(rerr, unix.ENOSYS), errors.Is(rerr, unix.EINVAL):
		return fault.Wrap(fault.Unavailable, rerr, "this filesystem cannot rename without replacing (renameat2 RENAME_NOREPLACE); refusing a weaker rename")
	case errors.Is(rerr, unix.EXDEV):
		return fault.Wrap(fault.Unavailable, rerr, "source and destination are on different filesystems; nothing was moved")
	case errors.Is(rerr, unix.ENOENT):
		return fault.Wrap(fault.NotFound, rerr, "publishing failed: the staged name is gone")
	}
	return fault.Wrap(fault.IO, &os.LinkError{Op: "renameat2", Old: from, New: to, Err: rerr}, "publishing failed")
}

// control runs op with f's descriptor.
func control(f *os.File, op func(fd int) error) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var opErr error
	if err := raw.Control(func(fd uintptr) { opErr = op(int(fd)) }); err != nil {
		return err
	}
	return opErr
}
