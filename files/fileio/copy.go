package fileio

import (
	"context"
	"io"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/internal/noreplace"
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
	// An early, friendly refusal; the no-replace rename below is what
	// guarantees that an existing destination is never replaced.
	if _, err := dd.Lstat(dname, "destination"); err == nil {
		return 0, exists()
	} else if fault.CodeOf(err) != fault.NotFound {
		return 0, err
	}
	tmp, tmpName, err := dd.CreateTemp("copy")
	if err != nil {
		return 0, err
	}
	published := false
	defer func() {
		tmp.Close()
		if !published {
			dd.Remove(tmpName)
		}
	}()
	var done int64
	opts.progress(0, size)
	for done < size {
		if err := ctx.Err(); err != nil {
			return 0, fault.As(err)
		}
		// *os.File.ReadFrom of a limited *os.File uses copy_file_range(2)
		// where the kernel can, and a plain read/write loop elsewhere.
		n, err := tmp.ReadFrom(&io.LimitedReader{R: f.f, N: min(limits.FileChunkBytes, size-done)})
		done += n
		f.off = done
		if err != nil {
			return 0, atfile.Fault(err, "copy")
		}
		if n == 0 {
			return 0, changed("shrank")
		}
		opts.progress(done, size)
	}
	if _, err := f.Read(make([]byte, 1)); err != io.EOF {
		return 0, err
	}
	if err := f.Verify(); err != nil {
		return 0, err
	}
	if err := tmp.Sync(); err != nil {
		return 0, fault.Wrap(fault.IO, err, "syncing the copy failed")
	}
	if err := noreplace.Rename(dd.File(), tmpName, dname); err != nil {
		if fault.CodeOf(err) == fault.Conflict {
			return 0, exists()
		}
		return 0, err
	}
	published = true
	return done, nil
}

func exists() *fault.Error {
	return fault.New(fault.Conflict, "destination already exists; a copy never overwrites: choose a new name or remove it first")
}
