package cli

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/store/state"
)

// output is where a command's result goes, decided and checked before
// the command does anything that cannot be undone (a fetch is sent and
// charged): standard output, a stream (a character device such as
// /dev/null, or a FIFO), or a regular file replaced atomically.
type output struct {
	w    io.Writer
	f    *os.File
	path string
}

// openFetchOutput checks -o for a fetched body: "" and "-" are standard
// output (not with --json, whose receipt goes there), a stream is opened
// now, and a regular file must be creatable or replaceable where it is.
func openFetchOutput(env *Env, name string) (*output, error) {
	if name == "" || name == "-" {
		if env.JSON {
			return nil, fault.New(fault.InvalidInput, "--json prints the receipt on standard output: give -o FILE for the body")
		}
		return &output{w: env.Stdout}, nil
	}
	path, err := absPath(name)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(path); err == nil && (st.Mode()&fs.ModeCharDevice != 0 || st.Mode()&fs.ModeNamedPipe != 0) {
		return openStream(path, name)
	}
	t, err := scope.Host(path)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	d, base, err := t.Parent()
	if err != nil {
		return nil, err
	}
	st, err := d.Lstat(base, name)
	switch {
	case fault.CodeOf(err) == fault.NotFound:
	case err != nil:
		return nil, err
	case st.Mode.IsDir():
		return nil, fault.New(fault.InvalidInput, "-o %s is a directory: name the file to write", name)
	case !st.Mode.IsRegular():
		return nil, scope.NotRegular(name, st.Mode)
	}
	return &output{path: path}, nil
}

// openStream opens a character device or FIFO for writing. A FIFO no
// process reads is refused rather than waited on.
func openStream(path, name string) (*output, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if errors.Is(err, syscall.ENXIO) {
		return nil, fault.New(fault.Unavailable, "-o %s is a FIFO that no process reads; start the reader first", name)
	}
	if err != nil {
		return nil, scope.Fault(err, "-o "+name)
	}
	if err := unix.SetNonblock(int(f.Fd()), false); err != nil {
		f.Close()
		return nil, fault.Wrap(fault.IO, err, "-o %s: cannot be written to", name)
	}
	return &output{w: f, f: f}, nil
}

// write writes data whole: to the stream, or as the file's new content.
func (o *output) write(ctx context.Context, data []byte) error {
	if o.path != "" {
		return state.Replace(ctx, o.path, data)
	}
	if _, err := o.w.Write(data); err != nil {
		return fault.Wrap(fault.IO, err, "writing the body failed")
	}
	return nil
}

func (o *output) close() {
	if o.f != nil {
		o.f.Close()
	}
}
