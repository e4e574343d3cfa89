package atfile

import (
	"os"
	"sync"

	"github.com/capkit/capkit/limits"
)

// roots caches the granted roots of the process by host path: every tool,
// whichever stack it is written on, gets its root here, opened and checked
// (OpenRoot: a directory, not a pseudo-filesystem) once. Opening a root is
// several system calls, which a grep over thousands of files would
// otherwise pay per file. A cached root is the directory that was at its
// path when it was first used: replacing that directory later is not
// followed until the process restarts.
var roots = struct {
	sync.Mutex
	byPath map[string]*os.Root
	// dev is each cached root's device: a directory opened through it on
	// the same device needs no filesystem check of its own.
	dev map[*os.Root]uint64
	// host is each cached root's host path, once asked (RootPath).
	host map[*os.Root]string
}{byPath: map[string]*os.Root{}, dev: map[*os.Root]uint64{}, host: map[*os.Root]string{}}

// AcquireRoot returns the root at the absolute host path dir, from the
// cache, and the function that releases it (closing it only if it was
// not cached: past limits.RootCacheEntries roots, they are opened per
// call). Never Close the root itself. role names dir in messages.
func AcquireRoot(dir, role string) (*os.Root, func(), error) {
	roots.Lock()
	defer roots.Unlock()
	if r := roots.byPath[dir]; r != nil {
		return r, func() {}, nil
	}
	r, err := OpenRoot(dir, role)
	if err != nil {
		return nil, nil, err
	}
	if len(roots.byPath) >= limits.RootCacheEntries {
		return r, func() { r.Close() }, nil
	}
	d, err := openSelfIn(r, role)
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	roots.dev[r] = d.dev
	d.Close()
	roots.byPath[dir] = r
	return r, func() {}, nil
}

// checkedDev reports whether r is a cached root on device dev, so a
// directory on dev opened through it needs no filesystem check.
func checkedDev(r *os.Root, dev uint64) bool {
	roots.Lock()
	defer roots.Unlock()
	d, ok := roots.dev[r]
	return ok && d == dev
}
