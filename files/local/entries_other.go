//go:build !linux

package local

import (
	"context"
	"os"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/atfile"
)

// entries returns d's entries sorted by name, staging files left out,
// each lstat'ed relative to d for its type (getdents' d_type is read on
// Linux only).
func (d *dirHandle) entries(ctx context.Context, display string) ([]files.DirEntry, error) {
	names, err := d.names(ctx, display)
	if err != nil {
		return nil, err
	}
	out := make([]files.DirEntry, 0, len(names))
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return nil, fault.As(err)
		}
		st, ok, err := d.lstat(n)
		if err != nil {
			return nil, atfile.Fault(&os.PathError{Op: "fstatat", Path: join(display, n), Err: err}, display)
		}
		if ok {
			out = append(out, files.DirEntry{Name: n, Type: modeOf(&st)})
		}
	}
	return out, nil
}
