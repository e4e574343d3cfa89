package atfile

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"

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
// Exceeding a bound (b) fails with fault.Limit: the walk never returns a
// silently shorter result. An entry removed during the walk is skipped.
// Names in the staging namespace are never visited, and an entry on a
// pseudo-filesystem (a mount point inside the tree) fails the walk with
// denied (see Dir.Lstat) where the walk looks at it.
//
// A walk taken a directory at a time (from several goroutines: each Dir
// is safe for concurrent use) lists with Dir.ReadEntries and takes each
// step as Walk does, with EntryStat and Descend.
func Walk(ctx context.Context, root *Dir, b WalkBounds, fn WalkFunc) error {
	if b.DirNames <= 0 || b.DirNames > b.Names {
		b.DirNames = b.Names
	}
	w := walker{fn: fn, left: b.Names, b: b}
	return w.walk(ctx, root, "", 0)
}

// WalkBounds bound a Walk.
type WalkBounds struct {
	// Names bounds every name read in all.
	Names int
	// DirNames bounds the names of one directory; zero means Names.
	DirNames int
	// Depth bounds the depth of any entry.
	Depth int
}

type walker struct {
	fn   WalkFunc
	left int
	b    WalkBounds
}

func (w *walker) walk(ctx context.Context, d *Dir, prefix string, depth int) error {
	entries, err := w.read(ctx, d)
	if err != nil {
		switch {
		case fault.CodeOf(err) != fault.Limit:
			return err
		case w.left <= w.b.DirNames:
			return fault.New(fault.Limit, "the tree has more than %d entries (the limit)", w.b.Names)
		}
		dir := strings.TrimSuffix(prefix, "/")
		if dir == "" {
			dir = "."
		}
		return fault.New(fault.Limit, "directory %q has more than %d entries (the limit)", dir, w.b.DirNames)
	}
	w.left -= len(entries)
	if len(entries) > 0 && depth+1 > w.b.Depth {
		return fault.New(fault.Limit, "the tree is deeper than %d levels (the limit)", w.b.Depth)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return fault.As(err)
		}
		st, ok, err := d.EntryStat(e, false)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := w.visit(ctx, d, prefix, depth, e.Name, st); err != nil {
			return err
		}
	}
	return nil
}

// EntryStat is what a walk knows of the entry e that d's listing has:
// with typesOnly, a regular file or directory's type alone (Size -1; a
// directory's Ino is the listing's: Descend checks it, and whoever opens
// a file checks what it opened, as Dir.OpenListed does), else its Lstat.
// Every other entry is looked at either way: with typesOnly, a directory
// not descended into is not looked at, so a mount there neither fails the
// walk nor is opened. ok is false when the entry was removed since it
// was listed (the walk skips it; with typesOnly, a regular file removed
// after the listing fails where it is opened: not_found).
func (d *Dir) EntryStat(e Entry, typesOnly bool) (st Stat, ok bool, err error) {
	switch {
	case typesOnly && e.Type.IsRegular():
		return Stat{Size: -1}, true, nil
	case typesOnly && e.Type.IsDir():
		return Stat{Mode: fs.ModeDir, Ino: e.Ino, Size: -1}, true, nil
	}
	st, err = d.Lstat(e.Name, "entry")
	if errors.Is(err, fault.ErrNotFound) {
		return Stat{}, false, nil
	}
	if err != nil {
		return Stat{}, false, err
	}
	return st, true, nil
}

// read lists d's names, sorted.
func (w *walker) read(ctx context.Context, d *Dir) ([]Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fault.As(err)
	}
	names, err := d.ReadNames(min(w.left, w.b.DirNames))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	entries := make([]Entry, len(names))
	for i, n := range names {
		entries[i] = Entry{Name: n}
	}
	return entries, nil
}

// visit calls fn for one entry and walks into it if fn asks.
func (w *walker) visit(ctx context.Context, d *Dir, prefix string, depth int, name string, st Stat) error {
	rel := prefix + name
	descend, err := w.fn(rel, depth+1, st, d, name)
	if err != nil || !descend || !st.Mode.IsDir() {
		return err
	}
	sub, ok, err := d.Descend(name, st)
	if err != nil || !ok {
		return err
	}
	defer sub.Close()
	return w.walk(ctx, sub, rel+"/", depth+1)
}

// Descend opens the directory name, which d's listing has with st (from
// EntryStat), as a walk walks into it: without following a symlink, and
// checking that it opened the directory it looked at (else integrity: a
// directory in the tree was replaced). ok is false when the directory
// was removed since it was listed (the walk skips it).
func (d *Dir) Descend(name string, st Stat) (sub *Dir, ok bool, err error) {
	sub, sst, err := d.OpenSubdir(name, "directory")
	if errors.Is(err, fault.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		if errors.Is(err, ErrSymlink) || errors.Is(err, ErrNotDir) {
			return nil, false, fault.Wrap(fault.Integrity, ErrChanged, "a directory in the tree was replaced during the walk")
		}
		return nil, false, err
	}
	if st.Size < 0 { // type only: the listing's inode, on d's device
		st.Dev = d.dev
		if sst.Dev != d.dev || sst.Ino != st.Ino {
			st, err = d.Lstat(name, "entry")
			if errors.Is(err, fault.ErrNotFound) {
				sub.Close()
				return nil, false, nil
			}
			if err != nil {
				sub.Close()
				return nil, false, err
			}
		}
	}
	if sst.Dev != st.Dev || sst.Ino != st.Ino {
		sub.Close()
		return nil, false, fault.Wrap(fault.Integrity, ErrChanged, "a directory in the tree was replaced during the walk")
	}
	return sub, true, nil
}
