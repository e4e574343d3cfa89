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
// silently shorter result. An entry removed during the walk is skipped
// (with TypesOnly, a regular file removed after the listing is still
// passed to fn, and fails where it is opened: not_found).
// Names in the staging namespace are never visited, and an entry on a
// pseudo-filesystem (a mount point inside the tree) fails the walk with
// denied (see Dir.Lstat) where the walk looks at it; with TypesOnly, a
// directory fn does not descend into is not looked at, so a mount there
// neither fails the walk nor is opened.
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
	// TypesOnly spares the lstat of an entry the directory lists as a
	// regular file or a directory (getdents' d_type): fn gets a Stat with
	// only its type (Size -1; a directory's Ino is the listing's), and
	// whoever opens a file checks what it opened (as Dir.OpenListed
	// does); the walk opens a directory with O_NOFOLLOW|O_DIRECTORY and
	// checks it is the inode listed (else, as at a mount point, it looks
	// at the name and checks that). Every other entry is lstat'ed as
	// without it.
	TypesOnly bool
	// OnList, when set, is called with each directory's entries, in
	// name order, before fn is called for them: depth is the directory's
	// own (0 for the walk's root). The slice is valid until the walk
	// leaves the directory.
	OnList func(depth int, entries []Entry)
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
	if w.b.OnList != nil {
		w.b.OnList(depth, entries)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return fault.As(err)
		}
		st := Stat{Size: -1}
		switch {
		case w.b.TypesOnly && e.Type.IsRegular():
		case w.b.TypesOnly && e.Type.IsDir():
			st = Stat{Mode: fs.ModeDir, Ino: e.Ino, Size: -1}
		default:
			st, err = d.Lstat(e.Name, "entry")
			if errors.Is(err, fault.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
		}
		if err := w.visit(ctx, d, prefix, depth, e.Name, st); err != nil {
			return err
		}
	}
	return nil
}

// read lists d: names and d_types with TypesOnly, else names.
func (w *walker) read(ctx context.Context, d *Dir) ([]Entry, error) {
	max := min(w.left, w.b.DirNames)
	if w.b.TypesOnly {
		return d.ReadEntries(ctx, max, "directory")
	}
	names, err := d.ReadNames(max)
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
	sub, sst, err := d.OpenSubdir(name, "directory")
	if errors.Is(err, fault.ErrNotFound) {
		return nil
	}
	if err != nil {
		if errors.Is(err, ErrSymlink) || errors.Is(err, ErrNotDir) {
			return fault.Wrap(fault.Integrity, ErrChanged, "a directory in the tree was replaced during the walk")
		}
		return err
	}
	defer sub.Close()
	if st.Size < 0 { // type only: the listing's inode, on d's device
		st.Dev = d.dev
		if sst.Dev != d.dev || sst.Ino != st.Ino {
			st, err = d.Lstat(name, "entry")
			if errors.Is(err, fault.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	if sst.Dev != st.Dev || sst.Ino != st.Ino {
		return fault.Wrap(fault.Integrity, ErrChanged, "a directory in the tree was replaced during the walk")
	}
	return w.walk(ctx, sub, rel+"/", depth+1)
}
