package local

import (
	"context"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/scope"
)

// The provider's calls on a name resolved in a scope, as the file tools
// make them: a name the scope refuses fails as the call would.

// in is the scope of root with the default protected set.
func in(root string) *scope.Scope { return scope.In([]string{root}, capability.Protected{}) }

func with[T any](sc *scope.Scope, name string, f func(*scope.Target) (T, error)) (T, error) {
	t, err := sc.Resolve(name)
	if err != nil {
		var zero T
		return zero, err
	}
	defer t.Close()
	return f(t)
}

func readAll(p *Provider, ctx context.Context, sc *scope.Scope, name string, max int64) ([]byte, files.Version, error) {
	var v files.Version
	data, err := with(sc, name, func(t *scope.Target) ([]byte, error) {
		data, ver, err := p.ReadAll(ctx, t, max)
		v = ver
		return data, err
	})
	return data, v, err
}

func open(p *Provider, ctx context.Context, sc *scope.Scope, name string) (files.File, error) {
	return with(sc, name, func(t *scope.Target) (files.File, error) { return p.Open(ctx, t) })
}

func stat(p *Provider, ctx context.Context, sc *scope.Scope, name string) (files.Info, error) {
	return with(sc, name, func(t *scope.Target) (files.Info, error) { return p.Stat(ctx, t) })
}

func readDir(p *Provider, ctx context.Context, sc *scope.Scope, name string, max int) ([]files.DirEntry, int, error) {
	var total int
	entries, err := with(sc, name, func(t *scope.Target) ([]files.DirEntry, error) {
		e, n, err := p.ReadDir(ctx, t, max)
		total = n
		return e, err
	})
	return entries, total, err
}

func walk(p *Provider, ctx context.Context, sc *scope.Scope, name string, fn files.WalkFunc) error {
	_, err := with(sc, name, func(t *scope.Target) (struct{}, error) { return struct{}{}, p.Walk(ctx, t, fn) })
	return err
}

// walkTreeIn walks name's tree through OpenTree, depth first, calling fn
// with each entry and the open directory that listed it (nil for the
// start); the directories stay open until keep returns, then are closed.
func walkTreeIn(p *Provider, ctx context.Context, sc *scope.Scope, name string, fn func(info files.Info, dir files.WalkTree) error) error {
	_, err := with(sc, name, func(t *scope.Target) (struct{}, error) {
		info, tree, err := p.OpenTree(ctx, t)
		if err != nil {
			return struct{}{}, err
		}
		if err := fn(info, nil); err != nil || tree == nil {
			return struct{}{}, err
		}
		return struct{}{}, walkTreeDir(ctx, tree, fn)
	})
	return err
}

func walkTreeDir(ctx context.Context, tree files.WalkTree, fn func(info files.Info, dir files.WalkTree) error) error {
	defer tree.Close()
	entries, err := tree.List(ctx, 1000)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := fn(files.Info{Name: e.Name, Mode: e.Type, Size: -1}, tree); err != nil {
			return err
		}
		if e.IsDir() {
			sub, err := tree.Sub(ctx, e)
			if err != nil {
				return err
			}
			if sub != nil {
				if err := walkTreeDir(ctx, sub, fn); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func write(p *Provider, ctx context.Context, sc *scope.Scope, name string, data []byte, opts *files.WriteOptions) (files.Version, error) {
	return with(sc, name, func(t *scope.Target) (files.Version, error) { return p.Write(ctx, t, data, opts) })
}

func move(p *Provider, ctx context.Context, sc *scope.Scope, from, to string) error {
	_, err := with(sc, from, func(f *scope.Target) (struct{}, error) {
		return with(sc, to, func(t *scope.Target) (struct{}, error) { return struct{}{}, p.Move(ctx, f, t) })
	})
	return err
}

func makeDir(p *Provider, ctx context.Context, sc *scope.Scope, name string) (bool, error) {
	return with(sc, name, func(t *scope.Target) (bool, error) { return p.MakeDir(ctx, t) })
}
