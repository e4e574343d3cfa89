// Package toolkit reads the document a reader tool was given: inline text
// or a path read through the host's files.FileReader, never both, bounded.
package toolkit

import (
	"context"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/kernel"
)

// Read returns the bytes of exactly one of text and path. A path is read
// through r, confined to the session's read roots and bounded by max; a
// nil r refuses paths (denied). Inline text longer than max fails with
// limit; what names the document in messages ("HTML", "feed").
func Read(ctx context.Context, call *kernel.Call, r files.FileReader, text, path string, max int64, what string) ([]byte, error) {
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
