package atfile

import (
	"context"
	"errors"
	"slices"

	"github.com/capkit/capkit/fault"
)

// WalkFunc is called for each entry below a walk's root: rel is its
// slash-separated path relative to the root, depth its number of path
// elements (1 for the root's children), st its metadata (not following a
// symlink), and parent and name locate it for *at calls. For a directory,
// returning descend=true walks into it; a non-nil error stops the walk.
type WalkFunc func(rel string, depth int, st Stat, parent *Dir, name string) (descend bool, err error)

// Walk visits the tree below root depth first, each directory's names in
// byte order, parents before their children. It descends only by opening
// a name inside an already open directory with O_NOFOLLOW, so it never
// follows a symlink and never leaves the tree, whatever is renamed or
// swapped meanwhile; a directory replaced between its lstat and its open
// fails with integrity.
//
// maxNames bounds every name read in all; maxDepth bounds the depth of
// any entry. Exceeding either fails with fault.Limit: the walk never
// returns a silently shorter result. An entry removed during the walk is
// skipped.
func Walk(ctx context.Context, root *Dir, maxNames, maxDepth int, fn WalkFunc) error {
	w := walker{fn: fn, left: maxNames, maxNames: maxNames, maxDepth: maxDepth}
	return w.walk(ctx, root, "", 0)
}

type walker struct {
	fn                 WalkFunc
	left               int
	maxNames, maxDepth int
}

func (w *walker) walk(ctx context.Context, d *Dir, prefix string, depth int) error {
	names, err := d.ReadNames(w.left)
	if err != nil {
		if fault.CodeOf(err) == fault.Limit {
			return fault.New(fault.Limit, "the tree has more than %d entries (the limit)", w.maxNames)
		}
		return err
	}
	w.left -= len(names)
	if len(names) > 0 && depth+1 > w.maxDepth {
		return fault.New(fault.Limit, "the tree is deeper than %d levels (the limit)", w.maxDepth)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return fault.As(err)
		}
		st, err := d.Lstat(name, "entry")
		if errors.Is(err, fault.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		rel := prefix + name
		descend, err := w.fn(rel, depth+1, st, d, name)
		if err != nil {
			return err
		}
		if !descend || !st.Mode.IsDir() {
			continue
		}
		sub, sst, err := d.OpenSubdir(name, "directory")
		if errors.Is(err, fault.ErrNotFound) {
			continue
		}
		if err != nil {
			if errors.Is(err, ErrSymlink) || errors.Is(err, ErrNotDir) {
				return fault.Wrap(fault.Integrity, ErrChanged, "a directory in the tree was replaced during the walk")
			}
			return err
		}
		if sst.Dev != st.Dev || sst.Ino != st.Ino {
			sub.Close()
			return fault.Wrap(fault.Integrity, ErrChanged, "a directory in the tree was replaced during the walk")
		}
		err = w.walk(ctx, sub, rel+"/", depth+1)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
