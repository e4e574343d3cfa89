package local

import (
	"context"
	"errors"
	iofs "io/fs"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
)

var _ files.TreeWalker = (*Provider)(nil)

// OpenTree opens t for a walk a directory at a time (scope.Dir: every
// directory below t opened inside its parent with O_NOFOLLOW and checked
// to be the one listed, no staging name, no pseudo-filesystem). A
// regular file or directory is listed with its type only, as the
// directory records it; the opener's File has a file's metadata.
func (p *Provider) OpenTree(ctx context.Context, t *scope.Target) (files.Info, files.WalkTree, error) {
	d, err := openDir(ctx, t)
	if fault.CodeOf(err) == fault.NotFound || errors.Is(err, scope.ErrNotDir) {
		var info files.Info
		err := walkFile(ctx, t, func(i files.Info) error { info = i; return nil })
		return info, nil, err
	}
	if err != nil {
		return files.Info{}, nil, err
	}
	st, err := d.Stat()
	if err != nil {
		d.Close()
		return files.Info{}, nil, err
	}
	return infoOf(t.Name(), st), &treeDir{d: d, name: t.Name()}, nil
}

// treeDir is a directory of a tree walk, named name (root-relative) in
// results; rel is its name relative to the walk's start, for messages.
type treeDir struct {
	d         *scope.Dir
	name, rel string
	listing   []scope.Entry // in name order, once listed
	names     []string      // the listing's root-relative names
	// next is where the listing's next lookup is tried first: a walk
	// opens a directory's files in name order.
	next atomic.Int64
}

func (w *treeDir) List(ctx context.Context, max int) ([]files.DirEntry, error) {
	entries, err := w.d.ReadEntries(ctx, max, "directory")
	if fault.CodeOf(err) == fault.Limit {
		rel := w.rel
		if rel == "" {
			rel = "."
		}
		return nil, fault.New(fault.Limit, "directory %q has more than %d entries (the limit)", rel, max)
	}
	if err != nil {
		return nil, err
	}
	out := make([]files.DirEntry, 0, len(entries))
	w.names = make([]string, 0, len(entries))
	kept := entries[:0]
	defer func() { w.listing = kept }()
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return out, fault.As(err)
		}
		st, ok, err := w.d.EntryStat(e, true)
		if err != nil {
			return out, err
		}
		if !ok {
			continue // removed since it was listed
		}
		e.Type = st.Mode.Type()
		kept = append(kept, e)
		name := join(w.name, e.Name)
		w.names = append(w.names, name)
		out = append(out, files.DirEntry{Name: name, Type: e.Type})
	}
	return out, nil
}

// entry returns the index of the listing's entry base.
func (w *treeDir) entry(base string) (int, bool) {
	i := int(w.next.Load())
	ok := i < len(w.listing) && w.listing[i].Name == base
	if !ok {
		i, ok = slices.BinarySearchFunc(w.listing, base, func(e scope.Entry, name string) int { return strings.Compare(e.Name, name) })
	}
	if ok {
		w.next.Store(int64(i + 1))
	}
	return i, ok
}

func (w *treeDir) Listed(base string) bool {
	_, ok := w.entry(base)
	return ok
}

// Open opens base as listed when the listing has it as a regular file
// (scope.Dir.OpenListedFD: checked by fstat of what it opened), and
// looks at any other name before it opens it (OpenRegular).
func (w *treeDir) Open(base string) (files.File, error) {
	if base == "" || base == "." || base == ".." || strings.Contains(base, "/") {
		return nil, fault.New(fault.InvalidInput, "%q is not a file name in %s", base, w.name)
	}
	if i, ok := w.entry(base); ok && w.listing[i].Type.IsRegular() {
		name := w.names[i]
		r, st, err := w.d.OpenListedFD(base, name)
		if err != nil {
			return nil, err
		}
		f := &file{info: infoOf(name, st), reg: r}
		f.f = &f.reg
		return f, nil
	}
	name := join(w.name, base)
	f, st, err := w.d.OpenRegular(base, name)
	if err != nil {
		return nil, err
	}
	return &file{f: f, info: infoOf(name, st)}, nil
}

func (w *treeDir) Sub(ctx context.Context, e files.DirEntry) (files.WalkTree, error) {
	if err := ctx.Err(); err != nil {
		return nil, fault.As(err)
	}
	base := e.Name[strings.LastIndexByte(e.Name, '/')+1:]
	i, ok := w.entry(base)
	if !ok || !w.listing[i].Type.IsDir() {
		return nil, fault.New(fault.InvalidInput, "%q is not a directory the listing of %s has", base, w.name)
	}
	st, _, _ := w.d.EntryStat(w.listing[i], true) // a listed directory's type: no call, no failure
	sub, ok, err := w.d.Descend(base, st)
	if err != nil || !ok {
		return nil, err
	}
	return &treeDir{d: sub, name: w.names[i], rel: join(w.relName(), base)}, nil
}

// relName is the directory's name relative to the walk's start, "." for
// the start.
func (w *treeDir) relName() string {
	if w.rel == "" {
		return "."
	}
	return w.rel
}

func (w *treeDir) Close() { w.d.Close() }

// walkOpen is Walk: every entry of t's tree, depth first in name order,
// each looked at (scope.Walk).
func walkOpen(ctx context.Context, t *scope.Target, fn files.WalkFunc) error {
	name := t.Name()
	d, err := openDir(ctx, t)
	if fault.CodeOf(err) == fault.NotFound || errors.Is(err, scope.ErrNotDir) {
		return walkFile(ctx, t, fn)
	}
	if err != nil {
		return err
	}
	defer d.Close()
	st, err := d.Stat()
	if err != nil {
		return err
	}
	if err := fn(infoOf(name, st)); err != nil {
		if err == iofs.SkipDir || err == iofs.SkipAll {
			err = nil
		}
		return err
	}
	bounds := scope.WalkBounds{Names: math.MaxInt, DirNames: limits.WalkMaxFiles, Depth: limits.WalkMaxDepth}
	err = scope.Walk(ctx, d, bounds, func(rel string, depth int, st scope.Stat, parent *scope.Dir, base string) (bool, error) {
		switch err := fn(infoOf(join(name, rel), st)); err {
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
