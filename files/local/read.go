package local

import (
	"context"
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"slices"
	"syscall"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/limits"
)

func infoOf(name string, st atfile.Stat) files.Info {
	return files.Info{Name: name, Size: st.Size, Mode: st.Mode, ModTime: st.ModTime}
}

// Stat describes name without following a final symlink.
func (p *Provider) Stat(ctx context.Context, root, name string) (files.Info, error) {
	if err := ctx.Err(); err != nil {
		return files.Info{}, fault.As(err)
	}
	if err := checkName(name); err != nil {
		return files.Info{}, err
	}
	r, release, err := p.root(root)
	if err != nil {
		return files.Info{}, err
	}
	defer release()
	if name == "." {
		d, err := atfile.OpenDirIn(r, ".")
		if err != nil {
			return files.Info{}, err
		}
		defer d.Close()
		st, err := atfile.Fstat(d.File())
		return infoOf(name, st), err
	}
	d, base, err := openParent(r, name)
	if err != nil {
		return files.Info{}, err
	}
	defer d.Close()
	st, err := d.Lstat(base, name)
	if err != nil {
		return files.Info{}, err
	}
	return infoOf(name, st), nil
}

// Open opens a regular file for reading (see openRegular).
func (p *Provider) Open(ctx context.Context, root, name string) (files.File, error) {
	f, st, err := p.openRegular(ctx, root, name)
	if err != nil {
		return nil, err
	}
	return &file{f: f, info: infoOf(name, st)}, nil
}

// openRegular opens the regular file name, following a final symlink only
// while it stays inside the root.
func (p *Provider) openRegular(ctx context.Context, root, name string) (*os.File, atfile.Stat, error) {
	if err := ctx.Err(); err != nil {
		return nil, atfile.Stat{}, fault.As(err)
	}
	if err := checkName(name); err != nil {
		return nil, atfile.Stat{}, err
	}
	if name == "." {
		return nil, atfile.Stat{}, atfile.NotRegular("the root", iofs.ModeDir)
	}
	r, release, err := p.root(root)
	if err != nil {
		return nil, atfile.Stat{}, err
	}
	defer release()
	cur := name
	for hops, swaps := 0, 0; ; hops++ {
		d, base, err := openParent(r, cur)
		if err != nil {
			return nil, atfile.Stat{}, err
		}
		f, st, err := d.OpenRegular(base, name)
		if errors.Is(err, atfile.ErrChanged) && swaps < maxSwaps {
			// Replaced by a rename between the look and the open, as an
			// atomic write does: look again.
			d.Close()
			swaps++
			continue
		}
		if !errors.Is(err, atfile.ErrSymlink) {
			d.Close()
			return f, st, err
		}
		target, err := d.Readlink(base, name)
		d.Close()
		if err != nil {
			return nil, atfile.Stat{}, err
		}
		if hops == limits.SymlinkMaxHops {
			return nil, atfile.Stat{}, fault.New(fault.Denied, "%s: more than %d symbolic links in a row", name, limits.SymlinkMaxHops)
		}
		if cur, err = follow(name, cur, target); err != nil {
			return nil, atfile.Stat{}, err
		}
	}
}

// maxSwaps bounds how often openRegular looks again at a file replaced
// while it was being opened.
const maxSwaps = 3

// follow returns the root-relative name the symlink cur, whose target is
// target, points to: refused if it leads out of the root or into the
// staging namespace.
func follow(name, cur, target string) (string, error) {
	if path.IsAbs(target) {
		return "", fault.Wrap(fault.Denied, atfile.ErrSymlink, "%s is a symbolic link to an absolute path; it leads out of the root", name)
	}
	next := path.Join(path.Dir(cur), target)
	switch {
	case next == "..", len(next) > 2 && next[:3] == "../":
		return "", fault.Wrap(fault.Denied, atfile.ErrSymlink, "%s is a symbolic link that leads out of the root", name)
	case next == ".":
		return "", fault.New(fault.InvalidInput, "%s is a symbolic link to the root directory, not a regular file", name)
	case files.IsTempName(next):
		return "", atfile.Reserved(name)
	}
	return next, nil
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
	reg atfile.Regular
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
		err = atfile.Fault(err, f.info.Name)
	}
	return n, err
}

func (f *file) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(b, off)
	if err != nil && err != io.EOF {
		err = atfile.Fault(err, f.info.Name)
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
// descriptor (atfile.Regular) where the walk opened it.
type regularFile interface {
	io.Reader
	io.ReaderAt
	io.Closer
}

// ReadAll reads a whole regular file of at most maxBytes bytes. A file that
// grows past maxBytes while it is read is a limit failure too.
func (p *Provider) ReadAll(ctx context.Context, root, name string, maxBytes int64) ([]byte, files.Version, error) {
	f, st, err := p.openRegular(ctx, root, name)
	if err != nil {
		return nil, files.Version{}, err
	}
	defer f.Close()
	data, err := readBounded(ctx, f, st.Size, maxBytes, name)
	if err != nil {
		return nil, files.Version{}, err
	}
	return data, files.VersionOf(data), nil
}

// readBounded reads f to its end into one buffer sized from the stat size,
// failing with limit past maxBytes.
func readBounded(ctx context.Context, f *os.File, size, maxBytes int64, name string) ([]byte, error) {
	if size > maxBytes {
		return nil, fault.LimitExceeded(name+": file bytes", maxBytes, size)
	}
	buf := make([]byte, 0, size+1) // +1: EOF is seen without growing
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > maxBytes {
				return nil, fault.LimitExceeded(name+": file bytes", maxBytes, int64(len(buf)))
			}
			buf = slices.Grow(buf, int(min(int64(cap(buf)), maxBytes+1-int64(len(buf)))))
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, atfile.Fault(err, name)
		}
		if err := ctx.Err(); err != nil {
			return nil, fault.As(err)
		}
	}
	if int64(len(buf)) > maxBytes {
		return nil, fault.LimitExceeded(name+": file bytes", maxBytes, int64(len(buf)))
	}
	return buf, nil
}

// ReadDir lists a directory from its own entries: names and types as the
// directory records them (atfile.Dir.ReadEntries), with no stat per entry.
func (p *Provider) ReadDir(ctx context.Context, root, name string, max int) ([]files.DirEntry, int, error) {
	d, err := p.openDir(ctx, root, name)
	if err != nil {
		return nil, 0, err
	}
	defer d.Close()
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

// openDir opens the directory name (followed if it is a symlink inside
// the root).
func (p *Provider) openDir(ctx context.Context, root, name string) (*atfile.Dir, error) {
	if err := ctx.Err(); err != nil {
		return nil, fault.As(err)
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	r, release, err := p.root(root)
	if err != nil {
		return nil, err
	}
	defer release()
	d, err := atfile.OpenDirIn(r, name)
	if errors.Is(err, syscall.ENOTDIR) {
		if fi, serr := r.Stat(name); serr == nil && !fi.IsDir() {
			return nil, atfile.NotDir(name, fi.Mode())
		}
	}
	return d, err
}

// Walk visits name and everything under it in lexical order. name itself
// is followed if it is a symlink that stays inside the root; nothing under
// it is (atfile.Walk: it descends only by opening a name inside an open
// directory with O_NOFOLLOW, checking it is the directory it examined).
func (p *Provider) Walk(ctx context.Context, root, name string, fn files.WalkFunc) error {
	return p.walkOpen(ctx, root, name, false, func(info files.Info, _ files.WalkDir) error { return fn(info) })
}

// walkFile is Walk of a name that is not a directory: a regular file is
// its own walk; anything else is refused.
func (p *Provider) walkFile(ctx context.Context, root, name string, fn files.WalkFunc) error {
	f, st, err := p.openRegular(ctx, root, name)
	if errors.Is(err, atfile.ErrNotRegular) {
		return fault.New(fault.InvalidInput, "%s: not a directory or regular file", name)
	}
	if err != nil {
		return err
	}
	f.Close()
	if err := fn(infoOf(name, st)); err != nil && err != iofs.SkipDir && err != iofs.SkipAll {
		return err
	}
	return nil
}
