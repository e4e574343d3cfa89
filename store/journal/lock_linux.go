package journal

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
)

// flock takes the journal's lock file exclusively (writers) or shared
// (readers), waiting at most until ctx's deadline or LockWait. flock(2)
// locks belong to the open file description, so two Journals in one
// process exclude each other as two processes do.
func (j *Journal) flock(ctx context.Context, exclusive bool) (func(), error) {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	fd := int(j.lock.Fd())
	deadline := time.Now().Add(j.o.LockWait)
	wait := time.Millisecond
	for {
		err := unix.Flock(fd, how|unix.LOCK_NB)
		if err == nil {
			return func() { unix.Flock(fd, unix.LOCK_UN) }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return nil, fault.Wrap(fault.IO, err, "locking the journal failed")
		}
		if time.Now().After(deadline) {
			return nil, fault.New(fault.Unavailable, "the journal is locked by another writer; retry").RetryIn(time.Second)
		}
		select {
		case <-ctx.Done():
			return nil, fault.As(ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
}

func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// checkPrivate refuses a directory others can use: it must be owned by
// this process's user and grant no group or other permissions.
func checkPrivate(c *scope.Changes) error {
	st, err := c.Stat()
	if err != nil {
		return fault.Wrap(fault.IO, err, "inspecting the journal directory failed")
	}
	if !st.Mode.IsDir() {
		return fault.New(fault.InvalidInput, "the journal directory is not a directory")
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		return fault.New(fault.Denied, "the journal directory must be private: owned by this user with mode 0700 (chmod 700 it)")
	}
	return nil
}
