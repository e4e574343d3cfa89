package local

import (
	"context"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/internal/scope"
)

// ReadFile implements toolkit.FileReader: path is resolved in the scope of
// roots and the regular file it names is read whole, bounded by maxBytes.
func (p *Provider) ReadFile(ctx context.Context, roots []string, path string, maxBytes int64) ([]byte, error) {
	t, err := scope.In(roots, capability.Protected{}).Resolve(path)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	data, _, err := p.ReadAll(ctx, t, maxBytes)
	return data, err
}
