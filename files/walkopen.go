package files

import (
	"context"

	"github.com/capkit/capkit/internal/scope"
)

// OpenWalker is implemented by a Provider whose walk can open files
// relative to the directory it holds open. That costs a few system calls
// where Open resolves the whole name again from the root, which was most
// of the time of a search over a deep tree. Callers use it when the
// provider has it and Walk and Open otherwise.
type OpenWalker interface {
	// WalkOpen is Walk with an opener for each entry.
	WalkOpen(ctx context.Context, t *scope.Target, fn WalkOpenFunc) error
}

// WalkOpenFunc is a WalkFunc with the directory that holds info (nil for
// the walk's starting point). The info of a regular file or directory may
// have only its type, with Size -1 (not looked at by the walk): the opened
// File's Info has a file's metadata.
type WalkOpenFunc func(info Info, dir WalkDir) error

// WalkDir is the open directory that holds an entry of a walk.
type WalkDir interface {
	// Open opens the regular file base in the directory (Open(path.Base(
	// info.Name)) opens info itself) under Open's guarantees, never
	// following a symlink. It is valid during the walk's call, and after
	// it while held.
	Open(base string) (File, error)
	// Listed reports whether the walk's listing of the directory had
	// base: a name it did not list need not be opened to learn it is
	// not there. Valid during the walk's call only.
	Listed(base string) bool
	// Hold keeps Open valid after the walk's call returns, until release
	// is called (once), so that the file can be opened elsewhere, later:
	// the directory stays open meanwhile, so the caller bounds how many it
	// holds.
	Hold() (release func())
}
