// Package local is the local-filesystem files.Provider: every name is opened
// through an os.Root for its root, so no path element, "..", absolute name
// or symlink can reach outside the root, whatever the name says or the
// filesystem does between two calls.
//
// What it guarantees, beyond os.Root's confinement:
//   - Reads return regular files only. A name is stat'ed through the root
//     and opened with O_NONBLOCK|O_NOCTTY, and the open file is checked
//     again with fstat, so a FIFO, socket or device (also one swapped in
//     between the two steps) is refused, never blocked on or read.
//   - Writes are atomic replacements: the content goes to a staging file
//     (named with files.TempPrefix) in the same directory, is fsynced, then
//     renamed over the target, and the directory is fsynced. A reader or a
//     crash sees the old content or the new, never a mix. The file keeps
//     its permission bits (and, where the process may, its owner).
//   - Writes never follow a symlink: the target is examined with
//     fstatat(AT_SYMLINK_NOFOLLOW) relative to its directory, opened once
//     through the root; a symlink target is refused, and the rename
//     replaces a directory entry, so nothing is ever written through a
//     link. A hard link to a file outside the root (nlink > 1) is replaced
//     by the rename, not written into: the outside file keeps its content.
//   - Guarded writes (files.WriteOptions.Guard) check the version and rename
//     under a lock keyed by (directory device, inode, name), so guarded
//     writes through one Provider are serialized per file.
//   - Staging files are never listed, walked, read, written or moved.
//
// What it does not guarantee: a process that writes the file directly,
// bypassing this Provider, can still change it between the version check
// and the rename (there is no portable advisory lock every writer honours).
// A staging file left by a crash stays on disk (hidden) until removed.
// Permission bits beyond 0o777 (setuid, setgid, sticky) are not carried
// over to the new content, and new files get mode 0o644 regardless of the
// umask. Unix only; Move needs Linux (renameat2 RENAME_NOREPLACE) and
// fails with unavailable elsewhere.
//
// It is written by hand because it is the seam between os.Root and capkit's
// version guard; the confinement itself is os.Root's, and filesystem errors
// become fault codes through internal/atfile.Fault, the mapping every file
// package shares.
package local

import (
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/atfile"
)

// Provider is the local-filesystem files.Provider. The zero value is not
// usable; use New. It is safe for concurrent use.
type Provider struct {
	mu    sync.RWMutex
	roots map[string]*os.Root
	locks lockTable
}

var (
	_ files.Provider   = (*Provider)(nil)
	_ files.FileReader = (*Provider)(nil)
)

// New returns a Provider. Roots are opened on first use and cached until
// Close.
func New() *Provider {
	return &Provider{roots: map[string]*os.Root{}, locks: lockTable{m: map[lockKey]*lockEntry{}}}
}

// Close closes every cached root.
func (p *Provider) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for k, r := range p.roots {
		errs = append(errs, r.Close())
		delete(p.roots, k)
	}
	return errors.Join(errs...)
}

// root returns the cached os.Root for path, opening it on first use.
func (p *Provider) root(path string) (*os.Root, error) {
	p.mu.RLock()
	r := p.roots[path]
	p.mu.RUnlock()
	if r != nil {
		return r, nil
	}
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return nil, fault.New(fault.Internal, "root %q is not an absolute, cleaned path", path)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.roots[path]; r != nil {
		return r, nil
	}
	r, err := atfile.OpenRoot(path, "root")
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "a granted root cannot be opened")
	}
	p.roots[path] = r
	return r, nil
}

// checkName refuses names a Provider never handles: empty, absolute, or
// naming a staging file.
func checkName(name string) error {
	switch {
	case name == "" || filepath.IsAbs(name):
		return fault.New(fault.Internal, "provider name %q must be root-relative", name)
	case files.IsTempName(name):
		return fault.New(fault.NotFound, "%s: not found", name)
	}
	return nil
}
