package local

import (
	"context"

	"github.com/capkit/capkit/files"
)

// ReadFile implements files.FileReader: path is resolved with files.Resolve
// against roots, and the regular file it names is read whole, bounded by
// maxBytes.
func (p *Provider) ReadFile(ctx context.Context, roots []string, path string, maxBytes int64) ([]byte, error) {
	root, rel, err := files.Resolve(roots, path)
	if err != nil {
		return nil, err
	}
	data, _, err := p.ReadAll(ctx, root, rel, maxBytes)
	return data, err
}
