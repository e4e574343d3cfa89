package local

import (
	"context"
	"errors"
	iofs "io/fs"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
)

var _ files.OpenWalker = (*Provider)(nil)

// WalkOpen is Walk with an opener relative to the directory being walked
// (scope.Dir.OpenRegular: no symlink, no special file, no staging name,
// no pseudo-filesystem, no swap between look and open). A regular file
// or directory is passed with its type only (Size -1): the walk does not
// stat it (scope.WalkBounds.TypesOnly), and the opener's File has a
// file's metadata.
func (p *Provider) WalkOpen(ctx context.Context, t *scope.Target, fn files.WalkOpenFunc) error {
	return walkOpen(ctx, t, true, fn)
}

// walkOpen is WalkOpen; typesOnly as in scope.WalkBounds.
func walkOpen(ctx context.Context, t *scope.Target, typesOnly bool, fn files.WalkOpenFunc) error {
	name := t.Name()
	d, err := openDir(ctx, t)
	if fault.CodeOf(err) == fault.NotFound || errors.Is(err, scope.ErrNotDir) {
		return walkFile(ctx, t, func(info files.Info) error { return fn(info, nil) })
	}
	if err != nil {
		return err
	}
	defer d.Close()
	st, err := d.Stat()
	if err != nil {
		return err
	}
	if err := fn(infoOf(name, st), nil); err != nil {
		if err == iofs.SkipDir || err == iofs.SkipAll {
			err = nil
		}
		return err
	}
	var listings [][]scope.Entry // by depth: the listings of the directories being walked
	bounds := scope.WalkBounds{Names: math.MaxInt, DirNames: limits.WalkMaxFiles, Depth: limits.WalkMaxDepth, TypesOnly: typesOnly,
		OnList: func(depth int, entries []scope.Entry) {
			listings = append(listings[:depth], entries)
		}}
	err = scope.Walk(ctx, d, bounds, func(rel string, depth int, st scope.Stat, parent *scope.Dir, base string) (bool, error) {
		full := join(name, rel)
		// An entry the walk did not look at (listed as regular) is opened
		// as listed; any other name is looked at before it is opened.
		wd := &walkDir{d: parent, dir: ".", listing: listings[depth-1]}
		if n := len(full) - len(base) - 1; n > 0 {
			wd.dir = full[:n] // path.Dir(full), which is clean
		}
		if st.Size < 0 && st.Mode.IsRegular() {
			wd.listed, wd.listedName = base, full
		}
		switch err := fn(infoOf(full, st), wd); err {
		case nil:
			return st.Mode.IsDir(), nil
		case iofs.SkipDir:
			return false, nil
		default:
			return false, err
		}
	})
	if err == iofs.SkipAll {
		err = nil
	}
	return err
}

// walkDir is the directory d of the walk, named dir in results; listed
// is the name of its entry that was just listed as a regular file and not
// looked at (opened with scope.Dir.OpenListedFD), "" if none, and
// listedName that entry's name in results: any other name is looked at
// before it is opened (OpenRegular).
type walkDir struct {
	d          *scope.Dir
	dir        string
	listed     string
	listedName string
	listing    []scope.Entry // of d, in name order
	// held is set by the first Hold, whose release is the walkDir's own
	// (grep holds each entry's once: one allocation less per file).
	held, released atomic.Bool
}

func (w *walkDir) Listed(base string) bool {
	_, ok := slices.BinarySearchFunc(w.listing, base, func(e scope.Entry, name string) int { return strings.Compare(e.Name, name) })
	return ok
}

func (w *walkDir) Hold() (release func()) {
	d := w.d.Hold()
	if w.held.CompareAndSwap(false, true) {
		return w.release
	}
	return sync.OnceFunc(func() { d.Close() })
}

// release lets go of the first Hold, once.
func (w *walkDir) release() {
	if w.released.CompareAndSwap(false, true) {
		w.d.Close()
	}
}

func (w *walkDir) Open(base string) (files.File, error) {
	if base == "" || base == "." || base == ".." || strings.Contains(base, "/") {
		return nil, fault.New(fault.InvalidInput, "%q is not a file name in %s", base, w.dir)
	}
	if base == w.listed {
		name := w.listedName
		r, st, err := w.d.OpenListedFD(base, name)
		if err != nil {
			return nil, err
		}
		f := &file{info: infoOf(name, st), reg: r}
		f.f = &f.reg
		return f, nil
	}
	name := join(w.dir, base)
	f, st, err := w.d.OpenRegular(base, name)
	if err != nil {
		return nil, err
	}
	return &file{f: f, info: infoOf(name, st)}, nil
}
