package local

import (
	"context"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/files"
)

// ReadFile implements files.FileReader: path is resolved with files.Resolve
// against the roots caps grant capability.ReadFile on, and the regular file
// it names is read whole, bounded by maxBytes.
func (p *Provider) ReadFile(ctx context.Context, caps capability.Set, path string, maxBytes int64) ([]byte, error) {
	root, rel, err := files.Resolve(caps.Roots(capability.ReadFile), path)
	if err != nil {
		return nil, err
	}
	data, _, err := p.ReadAll(ctx, root, rel, maxBytes)
	return data, err
}
