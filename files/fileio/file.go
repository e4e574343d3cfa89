package fileio

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
)

// ErrChanged is the cause of the fault.Integrity failure for a file that
// changed while it was read.
var ErrChanged = scope.ErrChanged

// File is an open regular file whose metadata was recorded when it was
// opened. Read returns exactly the recorded size and then io.EOF; Verify
// checks the metadata again. A caller that reads the whole file and then
// calls Verify without error has read one consistent version of it.
//
// File is what Create in the ZIP package and other readers of whole files
// share with ReadFile, Digest and Copy. It is not safe for concurrent use.
type File struct {
	f   *os.File
	st  scope.Stat
	off int64
	err error
}

// Open opens the regular file at the absolute host path path without
// following a symlink as its last element (see the package comment).
func Open(path string) (*File, error) {
	t, err := scope.Host(path)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	return OpenTarget(t, "file")
}

// OpenTarget opens the regular file t names, never following a symlink
// as its last element (scope.Target.OpenRegular); role names it in
// messages.
func OpenTarget(t *scope.Target, role string) (*File, error) {
	f, st, err := t.OpenRegular(role)
	if err != nil {
		return nil, err
	}
	return &File{f: f, st: st}, nil
}

// Size is the file's size when it was opened.
func (f *File) Size() int64 { return f.st.Size }

// ModTime is the file's modification time when it was opened.
func (f *File) ModTime() time.Time { return f.st.ModTime }

// Read reads the next bytes of the file. After Size bytes it returns
// io.EOF, or fault.Integrity if the file holds more; a file that ends
// early fails with fault.Integrity too.
func (f *File) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	left := f.st.Size - f.off
	if left <= 0 {
		return 0, f.atEnd()
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := f.f.Read(p)
	f.off += int64(n)
	switch {
	case err == io.EOF && f.off < f.st.Size:
		f.err = changed("shrank")
		return n, f.err
	case err != nil && err != io.EOF:
		f.err = fault.Wrap(fault.IO, err, "reading the file failed")
		return n, f.err
	}
	return n, nil
}

// atEnd checks that nothing follows the recorded size.
func (f *File) atEnd() error {
	var b [1]byte
	n, err := f.f.Read(b[:])
	switch {
	case n > 0:
		f.err = changed("grew")
	case err == io.EOF:
		return io.EOF
	case err != nil:
		f.err = fault.Wrap(fault.IO, err, "reading the file failed")
	default:
		f.err = fault.New(fault.IO, "reading the file returned no data and no end of file")
	}
	return f.err
}

// Verify fails with fault.Integrity if the file's metadata differ from
// those recorded at open, or if it was not read to its end without error.
func (f *File) Verify() error {
	if f.err != nil {
		return f.err
	}
	if f.off != f.st.Size {
		return fault.New(fault.Internal, "fileio: Verify before the file was read to its end")
	}
	st, err := scope.Fstat(f.f)
	if err != nil {
		return err
	}
	if !st.Same(f.st) {
		f.err = changed("was modified")
		return f.err
	}
	return nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

func changed(how string) *fault.Error {
	return fault.Wrap(fault.Integrity, ErrChanged, "the file %s while it was being read; nothing was returned: retry when it is stable", how)
}

// readAll reads the rest of f into a buffer of its size, checking ctx
// between chunks, and verifies it.
func readAll(ctx context.Context, f *File, chunk int) ([]byte, error) {
	buf := make([]byte, f.Size())
	for off := 0; off < len(buf); {
		if err := ctx.Err(); err != nil {
			return nil, fault.As(err)
		}
		n, err := io.ReadFull(f, buf[off:min(off+chunk, len(buf))])
		off += n
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return nil, changed("shrank")
			}
			return nil, err
		}
	}
	if _, err := f.Read(make([]byte, 1)); err != io.EOF {
		return nil, err
	}
	if err := f.Verify(); err != nil {
		return nil, err
	}
	return buf, nil
}
