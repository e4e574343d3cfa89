package local

import (
	"context"
	"errors"
	"io"
	iofs "io/fs"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
)

func infoOf(name string, st scope.Stat) files.Info {
	return files.Info{Name: name, Size: st.Size, Mode: st.Mode, ModTime: st.ModTime}
}

// Stat describes t without following a final symlink.
func (p *Provider) Stat(ctx context.Context, t *scope.Target) (files.Info, error) {
	if err := ctx.Err(); err != nil {
		return files.Info{}, fault.As(err)
	}
	st, err := t.Lstat(t.Name())
	if err != nil {
		return files.Info{}, err
	}
	return infoOf(t.Name(), st), nil
}

// Open opens the regular file t names for reading, following a final
// symlink only while it stays inside the root.
func (p *Provider) Open(ctx context.Context, t *scope.Target) (files.File, error) {
	f, st, err := openRegular(ctx, t)
	if err != nil {
		return nil, err
	}
	return &file{f: f, info: infoOf(t.Name(), st)}, nil
}

// openRegular is scope.Target.OpenFollowing, for a live context.
func openRegular(ctx context.Context, t *scope.Target) (regularFile, scope.Stat, error) {
	if err := ctx.Err(); err != nil {
		return nil, scope.Stat{}, fault.As(err)
	}
	if t.Name() == "." {
		return nil, scope.Stat{}, scope.NotRegular("the root", iofs.ModeDir)
	}
	f, st, err := t.OpenFollowing(t.Name())
	if err != nil {
		return nil, scope.Stat{}, err
	}
	return f, st, nil
}

// file hashes what is read sequentially, so a reader that streams the
// whole file learns its version without a second pass. The hash is made
// by the first Read: a file read only through ReadAt (grep's) has none.
type file struct {
	f    regularFile
	info files.Info
	hash *files.VersionHash
	eof  bool
	// reg is f when the walk opened the file on a bare descriptor.
	reg scope.Regular
}

func (f *file) Read(b []byte) (int, error) {
	if f.hash == nil {
		f.hash = files.NewVersionHash()
	}
	n, err := f.f.Read(b)
	f.hash.Write(b[:n])
	if err == io.EOF {
		f.eof = true
	} else if err != nil {
		err = scope.Fault(err, f.info.Name)
	}
	return n, err
}

func (f *file) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(b, off)
	if err != nil && err != io.EOF {
		err = scope.Fault(err, f.info.Name)
	}
	return n, err
}

func (f *file) Close() error { return f.f.Close() }

func (f *file) Info() files.Info { return f.info }

func (f *file) Version() (files.Version, bool) {
	if !f.eof {
		return files.Version{}, false
	}
	return f.hash.Version(), true
}

// regularFile is what a file reads through: an *os.File, or a bare
// descriptor (scope.Regular) where the walk opened it.
type regularFile interface {
	io.Reader
	io.ReaderAt
	io.Closer
}

// ReadAll reads the whole regular file t names, of at most maxBytes bytes
// (scope.Target.ReadAll): a file that grows past maxBytes while it is
// read is a limit failure too.
func (p *Provider) ReadAll(ctx context.Context, t *scope.Target, maxBytes int64) ([]byte, files.Version, error) {
	if err := ctx.Err(); err != nil {
		return nil, files.Version{}, fault.As(err)
	}
	if t.Name() == "." {
		return nil, files.Version{}, scope.NotRegular("the root", iofs.ModeDir)
	}
	data, err := t.ReadAll(ctx, maxBytes, t.Name())
	if err != nil {
		return nil, files.Version{}, err
	}
	return data, files.VersionOf(data), nil
}

// ReadDir lists the directory t names from its own entries: names and
// types as the directory records them, with no stat per entry.
func (p *Provider) ReadDir(ctx context.Context, t *scope.Target, max int) ([]files.DirEntry, int, error) {
	d, err := openDir(ctx, t)
	if err != nil {
		return nil, 0, err
	}
	defer d.Close()
	name := t.Name()
	entries, err := d.ReadEntries(ctx, limits.WalkMaxFiles, name)
	if err != nil {
		return nil, 0, err
	}
	total := len(entries)
	if max > 0 && len(entries) > max {
		entries = entries[:max]
	}
	out := make([]files.DirEntry, len(entries))
	for i, e := range entries {
		out[i] = files.DirEntry{Name: join(name, e.Name), Type: e.Type}
	}
	return out, total, nil
}

// openDir opens the directory t names (followed if it is a symlink inside
// the root).
func openDir(ctx context.Context, t *scope.Target) (*scope.Dir, error) {
	if err := ctx.Err(); err != nil {
		return nil, fault.As(err)
	}
	return t.OpenDir(t.Name())
}

// Walk visits t and everything under it in lexical order. t itself is
// followed if it is a symlink that stays inside the root; nothing under
// it is (scope.Walk: it descends only by opening a name inside an open
// directory with O_NOFOLLOW, checking it is the directory it examined).
func (p *Provider) Walk(ctx context.Context, t *scope.Target, fn files.WalkFunc) error {
	return walkOpen(ctx, t, fn)
}

// walkFile is Walk of a name that is not a directory: a regular file is
// its own walk; anything else is refused.
func walkFile(ctx context.Context, t *scope.Target, fn files.WalkFunc) error {
	f, st, err := openRegular(ctx, t)
	if errors.Is(err, scope.ErrNotRegular) {
		return fault.New(fault.InvalidInput, "%s: not a directory or regular file", t.Name())
	}
	if err != nil {
		return err
	}
	f.Close()
	if err := fn(infoOf(t.Name(), st)); err != nil && err != iofs.SkipDir && err != iofs.SkipAll {
		return err
	}
	return nil
}
