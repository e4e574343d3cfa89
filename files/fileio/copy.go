package fileio

import (
	"context"
	"io"
	"os"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
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
	sd, sname, err := atfile.OpenParent(src)
	if err != nil {
		return 0, err
	}
	defer sd.Close()
	dd, dname, err := atfile.OpenParent(dst)
	if err != nil {
		return 0, err
	}
	defer dd.Close()
	return copyAt(ctx, sd, sname, dd, dname, maxBytes, opts)
}

func copyAt(ctx context.Context, sd *atfile.Dir, sname string, dd *atfile.Dir, dname string, maxBytes int64, opts *Options) (int64, error) {
	f, err := openAt(sd, sname, "source")
	if err != nil {
		return 0, err
	}
	defer f.Close()
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
				return atfile.Fault(err, "copy")
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
	err = dd.Replace(ctx, dname, copy, &atfile.ReplaceOptions{Role: "destination", NoReplace: true})
	if fault.CodeOf(err) == fault.Conflict {
		return 0, exists()
	}
	if err != nil {
		return 0, err
	}
	return done, nil
}

func exists() *fault.Error {
	return fault.New(fault.Conflict, "destination already exists; a copy never overwrites: choose a new name or remove it first")
}
