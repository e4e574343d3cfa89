package atfile

import (
	"os"
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
