package files

import (
	"context"

	"github.com/capkit/capkit/internal/scope"
)

// TreeWalker is implemented by a Provider whose walk can be taken a
// directory at a time, by several goroutines at once: a search lists
// directories and searches files on every core, in whatever order it
// schedules them, and puts the results in walk order itself. Each file
// is opened relative to the directory that listed it, a few system
// calls where Open resolves the whole name again from the root. The
// walk keeps Walk's guarantees: it never follows a symlink under its
// start and never leaves the tree.
type TreeWalker interface {
	// OpenTree opens t for a walk: its Info and, when t is a directory,
	// the directory (nil when t is a regular file, which is its own
	// walk; anything else is refused, as Walk refuses it).
	OpenTree(ctx context.Context, t *scope.Target) (Info, WalkTree, error)
}

// WalkTree is an open directory of a tree walk. Its methods are safe for
// concurrent use, but List is called once, before Listed, Open and Sub,
// and Close once, after every other call has returned.
type WalkTree interface {
	// List reads the directory's entries in name order, names
	// root-relative and types as Walk has them (an entry removed since it
	// was listed left out). A directory of more than max entries fails
	// with limit. A failure at one entry returns the entries before it
	// with the failure.
	List(ctx context.Context, max int) ([]DirEntry, error)
	// Listed reports whether the listing has base, a name in the
	// directory: a name it did not list need not be opened to learn it is
	// not there.
	Listed(base string) bool
	// Open opens the regular file base in the directory under Open's
	// guarantees, never following a symlink.
	Open(base string) (File, error)
	// Sub opens the subdirectory e of the listing as Walk walks into it:
	// never through a symlink, and failing with integrity if it was
	// replaced since it was listed. It returns nil and no error when e
	// was removed since.
	Sub(ctx context.Context, e DirEntry) (WalkTree, error)
	// Close lets the directory go.
	Close()
}
