package atfile

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"syscall"

	"github.com/capkit/capkit/fault"
)

// HostPath is the directory's absolute path on the host now, as the
// kernel names its descriptor (symlinks resolved). The kernel names none
// of PATH_MAX bytes or more, and none without /proc.
func (d *Dir) HostPath() (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(d.f.Fd())))
	switch {
	case errors.Is(err, syscall.ENAMETOOLONG):
		return "", fault.Wrap(fault.Limit, err, "a directory's path on the host is too long for the kernel to name (PATH_MAX), so a change in it cannot be checked against the protected paths; nothing was changed: use a shallower directory")
	case errors.Is(err, fs.ErrNotExist):
		return "", fault.Wrap(fault.Unavailable, err, "/proc/self/fd cannot be read (is /proc mounted?), so a directory cannot be checked against the protected paths; nothing was changed")
	case err != nil:
		return "", fault.Wrap(fault.IO, err, "locating a directory failed")
	}
	return p, nil
}

// RootPath is the host path of the root r, remembered for a cached root
// unless fresh is set.
func RootPath(r *os.Root, fresh bool) (string, error) {
	if !fresh {
		roots.Lock()
		p, ok := roots.host[r]
		roots.Unlock()
		if ok {
			return p, nil
		}
	}
	p, err := selfPath(r)
	if err != nil {
		return "", err
	}
	roots.Lock()
	if _, cached := roots.dev[r]; cached {
		roots.host[r] = p
	}
	roots.Unlock()
	return p, nil
}

// selfPath is the host path of r's own directory.
func selfPath(r *os.Root) (string, error) {
	d, err := openSelfIn(r, "the root")
	if err != nil {
		return "", err
	}
	defer d.Close()
	return d.HostPath()
}
