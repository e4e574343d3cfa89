package toolkit

import (
	"context"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
)

// FileReader reads one whole regular file for a tool that takes a path
// argument (a document reader, say), confined to roots (absolute, cleaned
// directories; the caller passes those its capabilities grant reading on)
// and resolved in their scope (internal/scope). It fails with limit rather
// than return more than maxBytes, and never follows a path out of a root,
// blocks on a FIFO or device, reads a pseudo-filesystem or a staging file,
// or returns part of a file as the whole. files/local's Provider is the
// host's.
type FileReader interface {
	ReadFile(ctx context.Context, roots []string, path string, maxBytes int64) ([]byte, error)
}

// ReaderOptions configure the tools of a document reader (each parse
// group's ToolOptions is this type). A nil *ReaderOptions means the zero
// value: inline text only, and the tool's own default policy bounds.
type ReaderOptions struct {
	// Files reads the file a path argument names, confined to the
	// session's read_file roots. Nil refuses path arguments (denied):
	// documents must then be passed as text.
	Files FileReader
	// MaxInputBytes bounds each call's encoded arguments, inline text
	// included; zero is the tool's default (the kernel's unless the tool
	// names its own).
	MaxInputBytes int64
	// MaxOutputBytes bounds each result; zero is
	// limits.DefaultMaxOutputBytes.
	MaxOutputBytes int64
}

// Value returns *o, or the zero value for nil.
func (o *ReaderOptions) Value() ReaderOptions {
	if o == nil {
		return ReaderOptions{}
	}
	return *o
}

// Policy is the policy of the tool name, whose own default input bound is
// defaultInput (zero: the kernel's), under o's bounds.
func (o ReaderOptions) Policy(name string, defaultInput int64) kernel.Policy {
	p := kernel.Policy{Name: name, MaxInputBytes: o.MaxInputBytes, MaxOutputBytes: o.MaxOutputBytes}
	if p.MaxInputBytes == 0 {
		p.MaxInputBytes = defaultInput
	}
	return p
}

// Read returns the bytes of exactly one of text and path. A path is read
// through r, confined to the session's read roots and bounded by max; a
// nil r refuses paths (denied). Inline text longer than max fails with
// limit; what names the document in messages ("HTML", "feed").
func Read(ctx context.Context, call *kernel.Call, r FileReader, text, path string, max int64, what string) ([]byte, error) {
	switch {
	case text != "" && path != "":
		return nil, fault.New(fault.InvalidInput, "give the %s as text or as path, not both", what)
	case path != "":
		if r == nil {
			return nil, fault.New(fault.Denied, "this host reads no files for this tool: pass the %s as text", what)
		}
		return r.ReadFile(ctx, call.Session.Capabilities().Roots(capability.ReadFile), path, max)
	case text == "":
		return nil, fault.New(fault.InvalidInput, "give the %s as text or as path", what)
	case int64(len(text)) > max:
		return nil, fault.LimitExceeded(what+" bytes", max, int64(len(text)))
	}
	return []byte(text), nil
}
