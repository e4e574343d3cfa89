package zipfile

import (
	"archive/zip"
	"compress/flate"
	"context"
	"crypto/sha256"
	"errors"
	"hash/crc32"
	"io"
	"sync"
	"sync/atomic"

	"github.com/capkit/capkit/fault"
)

// Digest is a SHA-256 digest.
type Digest [sha256.Size]byte

const copyBuffer = 256 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, copyBuffer); return &b }}

// meter counts bytes across members and reports progress.
type meter struct {
	done     atomic.Int64
	max      int64 // bound on real bytes in all
	total    int64 // declared total, for progress
	mu       sync.Mutex
	progress func(done, total int64)
}

func (m *meter) add(n int64) bool {
	done := m.done.Add(n)
	if m.progress != nil {
		m.mu.Lock()
		m.progress(done, m.total)
		m.mu.Unlock()
	}
	return done <= m.max
}

// inflate decompresses m's data into w (nil to discard) and returns its
// SHA-256. The decompressed stream is read through a bound of the declared
// size plus one byte, so a member that holds more than it declares fails at
// that byte whatever its stream contains; CRC-32 is checked too.
func inflate(ctx context.Context, m member, w io.Writer, mt *meter) (Digest, error) {
	raw, err := m.zf.OpenRaw()
	if err != nil {
		return Digest{}, malformed("member %q: %v", m.name, err)
	}
	var src io.Reader
	switch m.zf.Method {
	case zip.Store:
		src = raw
	case zip.Deflate:
		fr := flate.NewReader(raw)
		defer fr.Close()
		src = fr
	}
	src = io.LimitReader(src, m.size+1)
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	h, crc := sha256.New(), crc32.NewIEEE()
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return Digest{}, fault.As(err)
		}
		k, rerr := src.Read(buf)
		if k > 0 {
			n += int64(k)
			if n > m.size {
				return Digest{}, memberFault(fault.Integrity, m.name, ErrSize, "member %q holds more data than the %d bytes it declares", m.name, m.size)
			}
			h.Write(buf[:k])
			crc.Write(buf[:k])
			if w != nil {
				if _, err := w.Write(buf[:k]); err != nil {
					return Digest{}, fault.Wrap(fault.IO, err, "writing member %q failed", m.name)
				}
			}
			if !mt.add(int64(k)) {
				return Digest{}, memberFault(fault.Limit, m.name, ErrSize, "archive holds more than %d bytes in all", mt.max)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if errors.Is(rerr, io.ErrUnexpectedEOF) || isFlateError(rerr) {
				return Digest{}, memberFault(fault.Integrity, m.name, ErrMalformed, "member %q: corrupt compressed data", m.name)
			}
			return Digest{}, fault.Wrap(fault.IO, rerr, "reading member %q failed", m.name)
		}
	}
	if n != m.size {
		return Digest{}, memberFault(fault.Integrity, m.name, ErrSize, "member %q holds %d bytes but declares %d", m.name, n, m.size)
	}
	if crc.Sum32() != m.zf.CRC32 {
		return Digest{}, memberFault(fault.Integrity, m.name, ErrDigest, "member %q fails its CRC-32 check", m.name)
	}
	var d Digest
	h.Sum(d[:0])
	return d, nil
}

func isFlateError(err error) bool {
	var ce flate.CorruptInputError
	return errors.As(err, &ce)
}

// forEach runs fn over items on up to workers goroutines and returns the
// first failure; after one, the context given to fn is canceled.
func forEach[T any](ctx context.Context, workers int, items []T, fn func(context.Context, T) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next  atomic.Int64
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	for range min(workers, len(items)) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(items)) || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, items[i]); err != nil {
					once.Do(func() { first = err; cancel(err) })
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if err := ctx.Err(); err != nil {
		return fault.As(err)
	}
	return nil
}
