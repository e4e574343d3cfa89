package files

import "context"

// OpenWalker is implemented by a Provider whose walk can open files
// relative to the directory it holds open. That costs a few system calls
// where Open resolves the whole name again from the root, which was most
// of the time of a search over a deep tree. Callers use it when the
// provider has it and Walk and Open otherwise.
type OpenWalker interface {
	// WalkOpen is Walk with an opener for each entry.
	WalkOpen(ctx context.Context, root, name string, fn WalkOpenFunc) error
}

// WalkOpenFunc is a WalkFunc with an opener: open(base) opens the regular
// file base in the directory that holds info (path.Base(info.Name) opens
// info itself) under Open's guarantees, never following a symlink. open
// is valid only during the call, and nil for the walk's starting point.
// A regular file's info may have Size -1 (not looked at by the walk): the
// opened File's Info has it.
type WalkOpenFunc func(info Info, open func(base string) (File, error)) error
