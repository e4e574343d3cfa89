package files

import "context"

// FileReader reads one whole regular file for a tool that takes a path
// argument (a document reader, say), confined to roots (absolute, cleaned
// directories; the caller passes those its capabilities grant reading on)
// and resolved in their scope (internal/scope). It fails with limit rather than return more
// than maxBytes, and never follows a path out of a root, blocks on a FIFO
// or device, reads a pseudo-filesystem or a staging file, or returns part
// of a file as the whole.
type FileReader interface {
	ReadFile(ctx context.Context, roots []string, path string, maxBytes int64) ([]byte, error)
}
