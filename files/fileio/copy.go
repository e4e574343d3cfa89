package fileio

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
)

// Copy copies the regular file at the absolute host path src to the new
// file dst, streaming it, and returns the number of bytes copied. maxBytes
// is the caller's explicit budget (1..math.MaxInt64); a larger source
// fails with fault.Limit before anything is written. An existing dst
// fails with fault.Conflict and is never touched. opts may be nil.
//
// The copy is written to a private temporary file beside dst, fsynced,
// and published without replacement (see the package comment); on any
// failure the temporary file is removed and dst does not appear.
func Copy(ctx context.Context, src, dst string, maxBytes int64, opts *Options) (int64, error) {
	if err := checkBudget(maxBytes); err != nil {
		return 0, err
	}
	s, err := scope.Host(src)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	d, err := scope.Host(dst)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	f, err := OpenTarget(s, "source")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return copyTo(ctx, f, d, maxBytes, opts, false)
}

// copyTo copies the open source f to the new file dst, making dst's
// missing parent directories first when makeParents is set.
func copyTo(ctx context.Context, f *File, dst *scope.Target, maxBytes int64, opts *Options, makeParents bool) (int64, error) {
	size := f.Size()
	if size > maxBytes {
		return 0, fault.LimitExceeded("source bytes", maxBytes, size)
	}
	var done int64
	copy := func(tmp *os.File) error {
		opts.progress(0, size)
		for done < size {
			if err := ctx.Err(); err != nil {
				return fault.As(err)
			}
			// *os.File.ReadFrom of a limited *os.File uses
			// copy_file_range(2) where the kernel can, and a plain
			// read/write loop elsewhere.
			n, err := tmp.ReadFrom(&io.LimitedReader{R: f.f, N: min(limits.FileChunkBytes, size-done)})
			done += n
			f.off = done
			if err != nil {
				return scope.Fault(err, "copy")
			}
			if n == 0 {
				return changed("shrank")
			}
			opts.progress(done, size)
		}
		if _, err := f.Read(make([]byte, 1)); err != io.EOF {
			return err
		}
		return f.Verify()
	}
	// NoReplace: an existing destination is refused before anything is
	// written, and the rename never replaces one created meanwhile.
	err := dst.Replace(ctx, copy, &scope.ReplaceOptions{Role: "destination", NoReplace: true, MakeParents: makeParents})
	switch {
	case fault.CodeOf(err) == fault.Conflict:
		return 0, exists()
	case makeParents && (errors.Is(err, syscall.ENOTDIR) || errors.Is(err, scope.ErrNotDir)):
		return 0, fault.New(fault.InvalidInput, "an element of the destination's directory is not a directory")
	case err != nil:
		return 0, err
	}
	return done, nil
}

func exists() *fault.Error {
	return fault.New(fault.Conflict, "destination already exists; a copy never overwrites: choose a new name or remove it first")
}
