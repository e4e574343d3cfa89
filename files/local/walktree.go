package local

import (
	"context"
	"errors"
	iofs "io/fs"
	"math"
	"slices"
	"strings"

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
	kept := entries[:0]
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return out, fault.As(err)
		}
		st, ok, err := w.d.EntryStat(e, true)
		if err != nil {
			w.listing = kept
			return out, err
		}
		if !ok {
			continue // removed since it was listed
		}
		e.Type = st.Mode.Type()
		kept = append(kept, e)
		out = append(out, files.DirEntry{Name: join(w.name, e.Name), Type: e.Type})
	}
	w.listing = kept
	return out, nil
}

// entry returns the listing's entry base.
func (w *treeDir) entry(base string) (scope.Entry, bool) {
	i, ok := slices.BinarySearchFunc(w.listing, base, func(e scope.Entry, name string) int { return strings.Compare(e.Name, name) })
	if !ok {
		return scope.Entry{}, false
	}
	return w.listing[i], true
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
	name := join(w.name, base)
	if e, ok := w.entry(base); ok && e.Type.IsRegular() {
		r, st, err := w.d.OpenListedFD(base, name)
		if err != nil {
			return nil, err
		}
		f := &file{info: infoOf(name, st), reg: r}
		f.f = &f.reg
		return f, nil
	}
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
	le, ok := w.entry(base)
	if !ok || !le.Type.IsDir() {
		return nil, fault.New(fault.InvalidInput, "%q is not a directory the listing of %s has", base, w.name)
	}
	st, _, _ := w.d.EntryStat(le, true) // a listed directory's type: no call, no failure
	sub, ok, err := w.d.Descend(base, st)
	if err != nil || !ok {
		return nil, err
	}
	return &treeDir{d: sub, name: join(w.name, base), rel: join(w.relName(), base)}, nil
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
