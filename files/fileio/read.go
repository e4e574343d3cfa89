package fileio

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Options are the optional parts of a streamed operation. A nil *Options
// is valid.
type Options struct {
	// Progress, when set, is called with the bytes done and the total once
	// before the first byte and after each chunk (limits.FileChunkBytes)
	// of a digest or copy. It must return quickly.
	Progress func(done, total int64)
}

func (o *Options) progress(done, total int64) {
	if o != nil && o.Progress != nil {
		o.Progress(done, total)
	}
}

// Sum is a file's SHA-256 digest and the number of bytes it covers.
type Sum struct {
	Size int64 `json:"size"`
	// SHA256 is the digest in lowercase hexadecimal, as sha256sum prints it.
	SHA256 string `json:"sha256"`
}

// ReadFile returns the whole regular file at the absolute host path path.
// maxBytes must be 1..limits.FileBufferedMaxBytes; a larger file fails
// with fault.Limit before anything is read.
func ReadFile(ctx context.Context, path string, maxBytes int64) ([]byte, error) {
	if err := checkBuffered(maxBytes); err != nil {
		return nil, err
	}
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(ctx, f, maxBytes)
}

func checkBuffered(maxBytes int64) error {
	switch {
	case maxBytes <= 0:
		return fault.New(fault.InvalidInput, "max bytes must be positive")
	case maxBytes > limits.FileBufferedMaxBytes:
		return fault.New(fault.Limit, "a buffered read is bounded by %d bytes, %d asked; stream larger files with Digest or Copy", int64(limits.FileBufferedMaxBytes), maxBytes)
	}
	return nil
}

func read(ctx context.Context, f *File, maxBytes int64) ([]byte, error) {
	if f.Size() > maxBytes {
		return nil, fault.LimitExceeded("file bytes", maxBytes, f.Size())
	}
	return readAll(ctx, f, limits.FileChunkBytes)
}

// checkBudget checks an explicit streaming budget.
func checkBudget(maxBytes int64) error {
	if maxBytes <= 0 {
		return fault.New(fault.InvalidInput, "streaming needs an explicit positive byte budget")
	}
	return nil
}

// Digest returns the SHA-256 digest of the regular file at the absolute
// host path path, streaming it. maxBytes is the caller's explicit budget
// (1..math.MaxInt64); a larger file fails with fault.Limit before anything
// is read. opts may be nil.
func Digest(ctx context.Context, path string, maxBytes int64, opts *Options) (Sum, error) {
	if err := checkBudget(maxBytes); err != nil {
		return Sum{}, err
	}
	f, err := Open(path)
	if err != nil {
		return Sum{}, err
	}
	defer f.Close()
	return digest(ctx, f, maxBytes, opts)
}

// digestBufferBytes is the read size: large enough that system calls cost
// little next to hashing, small enough to stay in cache.
const digestBufferBytes = 1 << 20

func digest(ctx context.Context, f *File, maxBytes int64, opts *Options) (Sum, error) {
	size := f.Size()
	if size > maxBytes {
		return Sum{}, fault.LimitExceeded("file bytes", maxBytes, size)
	}
	h := sha256.New()
	buf := make([]byte, min(digestBufferBytes, size+1))
	var done int64
	opts.progress(0, size)
	for {
		if err := ctx.Err(); err != nil {
			return Sum{}, fault.As(err)
		}
		n, err := io.CopyBuffer(h, io.LimitReader(f, limits.FileChunkBytes), buf)
		done += n
		if err != nil {
			return Sum{}, err
		}
		opts.progress(done, size)
		if n < limits.FileChunkBytes {
			break
		}
	}
	// The loop ends on a short chunk, which is f's io.EOF after exactly
	// Size bytes (File.Read fails on growth or shrinkage).
	if err := f.Verify(); err != nil {
		return Sum{}, err
	}
	return Sum{Size: done, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
