//go:build linux

package noreplace

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
)

func renameNoReplace(dir *os.File, from, to string) error {
	raw, err := dir.SyscallConn()
	if err != nil {
		return fault.Wrap(fault.IO, err, "publishing failed")
	}
	var rerr error
	if err := raw.Control(func(fd uintptr) {
		for {
			rerr = unix.Renameat2(int(fd), from, int(fd), to, unix.RENAME_NOREPLACE)
			if rerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return fault.Wrap(fault.IO, err, "publishing failed")
	}
	switch {
	case rerr == nil:
		return nil
	case errors.Is(rerr, unix.EEXIST), errors.Is(rerr, unix.ENOTEMPTY):
		return fault.Wrap(fault.Conflict, rerr, "the destination already exists; nothing was replaced")
	case errors.Is(rerr, unix.ENOSYS), errors.Is(rerr, unix.EINVAL):
		return fault.Wrap(fault.Unavailable, rerr, "this filesystem cannot rename without replacing (renameat2 RENAME_NOREPLACE); refusing a weaker rename")
	case errors.Is(rerr, unix.ENOENT):
		return fault.Wrap(fault.NotFound, rerr, "publishing failed: the staged name is gone")
	}
	return fault.Wrap(fault.IO, &os.LinkError{Op: "renameat2", Old: from, New: to, Err: rerr}, "publishing failed")
}
