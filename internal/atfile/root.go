package atfile

import (
	"os"

	"github.com/capkit/capkit/fault"
)

// OpenRoot opens the host directory dir as an os.Root, which confines
// every later open to it. os.OpenRoot and Root.OpenRoot open their last
// element without O_DIRECTORY or O_NONBLOCK, so a FIFO there would block
// the call; OpenRoot opens dir + "/." instead, which makes that element
// one that must be a directory (a FIFO or a file fails at once: not_found
// through Fault). Symlinks in dir are followed: the host names it. role
// names dir in messages.
// A root on a pseudo-filesystem (procfs...) is refused (denied).
func OpenRoot(dir, role string) (*os.Root, error) {
	r, err := os.OpenRoot(dir + "/.")
	if err != nil {
		return nil, Fault(err, role)
	}
	return checkedRoot(r, role)
}

// checkedRoot returns r, or closes it and refuses it if it lies on a
// pseudo-filesystem.
func checkedRoot(r *os.Root, role string) (*os.Root, error) {
	d, err := openSelfIn(r, role)
	if err != nil {
		r.Close()
		return nil, err
	}
	d.Close()
	return r, nil
}

// OpenRootIn is OpenRoot for the directory rel inside r: os.Root keeps
// every element of rel, symlinks included, inside r (one leading out is
// denied). An element of rel in the staging namespace is refused.
func OpenRootIn(r *os.Root, rel, role string) (*os.Root, error) {
	if HasStagingElement(rel) {
		return nil, Reserved(rel)
	}
	sub, err := r.OpenRoot(rel + "/.")
	if err != nil {
		return nil, Fault(err, role)
	}
	return checkedRoot(sub, role)
}

// ResolveRoot maps a caller's path onto roots with Resolve and opens
// the chosen root. It returns the root as an os.Root (close it), its host
// path, and path relative to it. A granted root that cannot be opened is
// unavailable: the host granted it, so it is the host's to fix.
func ResolveRoot(roots []string, path string) (r *os.Root, root, rel string, err error) {
	root, rel, err = Resolve(roots, path)
	if err != nil {
		return nil, "", "", err
	}
	r, err = openCached(root, "root")
	if err != nil {
		return nil, "", "", fault.Wrap(fault.Unavailable, err, "the granted root cannot be opened")
	}
	return r, root, rel, nil
}
