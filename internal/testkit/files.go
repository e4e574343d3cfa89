package testkit

import (
	"context"

	"github.com/capkit/capkit/fault"
)

// Files is a toolkit.FileReader over a map from path to content, with the
// checks the interface promises: denied when no root is given, not_found
// for a path not in the map, limit for content over maxBytes (so a test
// sees the bound a tool passes by the edge cases).
type Files map[string][]byte

// ReadFile implements toolkit.FileReader.
func (f Files) ReadFile(_ context.Context, roots []string, path string, maxBytes int64) ([]byte, error) {
	if len(roots) == 0 {
		return nil, fault.New(fault.Denied, "no root is granted for this operation")
	}
	data, ok := f[path]
	if !ok {
		return nil, fault.New(fault.NotFound, "%s: not found", path)
	}
	if int64(len(data)) > maxBytes {
		return nil, fault.LimitExceeded("file bytes", maxBytes, int64(len(data)))
	}
	return data, nil
}
