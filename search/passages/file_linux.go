//go:build linux

package passages

import (
	"context"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
)

// FindFile searches the regular file at the absolute host path path. The
// last path element is never followed if it is a symbolic link. The file
// is mapped into memory, not copied; a file that changes while it is
// searched fails with fault.Integrity (ErrChanged) and no result.
func FindFile(ctx context.Context, path, query string, opts *Options) (*Result, error) {
	t, err := scope.Host(path)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	return findTarget(ctx, t, query, opts)
}

// findTarget searches the regular file t names, as FindFile.
func findTarget(ctx context.Context, t *scope.Target, query string, opts *Options) (*Result, error) {
	f, st, err := t.OpenRegular("source")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size > limits.PassagesMaxSourceBytes {
		return nil, fault.LimitExceeded("source bytes", limits.PassagesMaxSourceBytes, st.Size)
	}
	var src []byte
	if st.Size > 0 {
		if src, err = unix.Mmap(int(f.Fd()), 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED); err != nil {
			return nil, fault.Wrap(fault.IO, err, "mapping the source failed")
		}
		defer unix.Munmap(src)
	}
	res, err := Find(ctx, src, query, opts)
	if err != nil {
		return nil, err
	}
	now, err := scope.Fstat(f)
	if err != nil {
		return nil, err
	}
	if !now.Same(st) {
		return nil, changed()
	}
	return res, nil
}
