package state

import (
	"context"
	"errors"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/limits"
)

// Replace atomically replaces the content of the state file at the
// absolute host path path with data, creating it if it does not exist.
// data may be at most limits.StateMaxBytes. See the package comment for
// the guarantees.
func Replace(ctx context.Context, path string, data []byte) error {
	if err := checkSize(len(data)); err != nil {
		return err
	}
	d, name, err := atfile.OpenParent(path)
	if err != nil {
		return err
	}
	defer d.Close()
	return replaceAt(ctx, d, name, data)
}

func checkSize(n int) error {
	if n > limits.StateMaxBytes {
		return fault.LimitExceeded("state bytes", limits.StateMaxBytes, int64(n))
	}
	return nil
}

func replaceAt(ctx context.Context, d *atfile.Dir, name string, data []byte) error {
	st, err := d.Lstat(name, "state file")
	switch {
	case err == nil && !st.Mode.IsRegular():
		return atfile.NotRegular("state file", st.Mode)
	case err != nil && !errors.Is(err, fault.ErrNotFound):
		return err
	}
	tmp, tmpName, err := d.CreateTemp("state")
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		tmp.Close()
		if !renamed {
			d.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return atfile.Fault(err, "state file")
	}
	if err := tmp.Sync(); err != nil {
		return fault.Wrap(fault.IO, err, "syncing the new state failed")
	}
	if err := ctx.Err(); err != nil {
		return fault.As(err)
	}
	if err := d.Rename(tmpName, name); err != nil {
		return err
	}
	renamed = true
	return d.Sync()
}
