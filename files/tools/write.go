package tools

import (
	"context"
	"fmt"
	"io"
	iofs "io/fs"
	"strconv"
	"unsafe"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

var writeDescription = fmt.Sprintf(`Writes a whole file of UTF-8 text (up to %s), creating missing parent directories. An existing file must have been read by this session with read_file and be unchanged since; otherwise the result is a conflict and nothing is written. To change part of a file, use edit_file.`,
	limits.Bytes(limits.WriteMaxBytes))

// WriteArgs are write_file's arguments.
type WriteArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// WriteResult reports a write.
type WriteResult struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes"`
	Created bool   `json:"created"`
}

func (r WriteResult) ToolText() string {
	verb := "replaced"
	if r.Created {
		verb = "created"
	}
	return verb + " " + r.Path + " (" + strconv.Itoa(r.Bytes) + " bytes)"
}

func (x *executor) writeFile(ctx context.Context, req request, in WriteArgs) (WriteResult, error) {
	if len(in.Content) > limits.WriteMaxBytes {
		return WriteResult{}, fault.LimitExceeded("content bytes", limits.WriteMaxBytes, int64(len(in.Content)))
	}
	t, err := x.resolveChange(req.caps, capability.WriteFile, in.Path)
	if err != nil {
		return WriteResult{}, err
	}
	defer t.Close()
	if t.name == "." {
		return WriteResult{}, fault.New(fault.InvalidInput, "%s is the root directory, not a file", t.display)
	}
	exists, cur, err := x.current(ctx, t)
	if err != nil {
		return WriteResult{}, err
	}
	e := &files.Expectation{Session: req.session, Op: files.OpWrite, Root: t.root, Name: t.name, Exists: exists, Current: cur}
	if err := x.events.ExpectWrite(ctx, e); err != nil {
		return WriteResult{}, err
	}
	// The provider neither modifies nor keeps data: no copy of the content.
	data := unsafe.Slice(unsafe.StringData(in.Content), len(in.Content))
	v, err := x.provider.Write(ctx, t.Target, data, &files.WriteOptions{Guard: e.Guard.Enabled, Expect: e.Guard.Version})
	if err != nil {
		return WriteResult{}, err
	}
	x.events.Observed(ctx, files.Observation{Session: e.Session, Op: files.OpWrite, Root: t.root, Name: t.name, Version: v})
	return WriteResult{Path: t.display, Bytes: len(in.Content), Created: !exists}, nil
}

// current reports whether t exists and, if it does, its version. It
// refuses a symlink or anything else that is not a regular file, since a
// write must not go through it.
func (x *executor) current(ctx context.Context, t target) (bool, files.Version, error) {
	info, err := x.provider.Stat(ctx, t.Target)
	if fault.CodeOf(err) == fault.NotFound {
		return false, files.Version{}, nil
	}
	if err != nil {
		return false, files.Version{}, err
	}
	if !info.IsRegular() {
		return false, files.Version{}, refuseTarget(t.display, info)
	}
	f, err := x.provider.Open(ctx, t.Target)
	if err != nil {
		return false, files.Version{}, err
	}
	defer f.Close()
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	if _, err := io.CopyBuffer(io.Discard, onlyReader{f}, *bp); err != nil {
		return false, files.Version{}, err
	}
	v, _ := f.Version()
	return true, v, nil
}

// onlyReader hides everything but Read, so io.CopyBuffer uses the buffer.
type onlyReader struct{ io.Reader }

// refuseTarget is the failure for writing to something that is not a
// regular file.
func refuseTarget(name string, info files.Info) error {
	switch {
	case info.Mode&iofs.ModeSymlink != 0:
		return fault.New(fault.Denied, "%s is a symbolic link; writes never follow symbolic links: write to the file it points to", name)
	case info.IsDir():
		return fault.New(fault.InvalidInput, "%s is a directory", name)
	}
	return fault.New(fault.InvalidInput, "%s is not a regular file (a FIFO, socket or device); only regular files can be written", name)
}
