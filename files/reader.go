package files

import (
	"context"

	"github.com/capkit/capkit/capability"
)

// FileReader reads one whole regular file for a tool that takes a path
// argument (a document reader, say), confined to the roots on which caps
// grant capability.ReadFile, resolved by Resolve. It fails with limit rather
// than return more than maxBytes, and never follows a path out of a root,
// blocks on a FIFO or device, or returns part of a file as the whole.
type FileReader interface {
	ReadFile(ctx context.Context, caps capability.Set, path string, maxBytes int64) ([]byte, error)
}
