package local

import (
	"context"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"slices"
	"syscall"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/fs"
	"github.com/capkit/capkit/limits"
)

func infoOf(name string, fi os.FileInfo) fs.Info {
	return fs.Info{Name: name, Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime()}
}

// Stat describes name without following a final symlink.
func (p *Provider) Stat(ctx context.Context, root, name string) (fs.Info, error) {
	if err := ctx.Err(); err != nil {
		return fs.Info{}, fault.As(err)
	}
	if err := checkName(name); err != nil {
		return fs.Info{}, err
	}
	r, err := p.root(root)
	if err != nil {
		return fs.Info{}, err
	}
	fi, err := r.Lstat(name)
	if err != nil {
		return fs.Info{}, mapErr(err, name)
	}
	return infoOf(name, fi), nil
}

// Open opens a regular file for reading: stat first, so that opening never
// touches a device or FIFO, then fstat the open file, so that one swapped
// in between is refused as well.
func (p *Provider) Open(ctx context.Context, root, name string) (fs.File, error) {
	f, fi, err := p.openRegular(ctx, root, name)
	if err != nil {
		return nil, err
	}
	return &file{f: f, info: infoOf(name, fi), hash: fs.NewVersionHash()}, nil
}

func (p *Provider) openRegular(ctx context.Context, root, name string) (*os.File, os.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fault.As(err)
	}
	if err := checkName(name); err != nil {
		return nil, nil, err
	}
	r, err := p.root(root)
	if err != nil {
		return nil, nil, err
	}
	fi, err := r.Stat(name)
	if err != nil {
		return nil, nil, mapErr(err, name)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, notRegular(name, fi.Mode())
	}
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, mapErr(err, name)
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, mapErr(err, name)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(name, fi.Mode())
	}
	return f, fi, nil
}

// file hashes what is read sequentially, so a reader that streams the
// whole file learns its version without a second pass.
type file struct {
	f    *os.File
	info fs.Info
	hash *fs.VersionHash
	eof  bool
}

func (f *file) Read(b []byte) (int, error) {
	n, err := f.f.Read(b)
	f.hash.Write(b[:n])
	if err == io.EOF {
		f.eof = true
	} else if err != nil {
		err = mapErr(err, f.info.Name)
	}
	return n, err
}

func (f *file) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(b, off)
	if err != nil && err != io.EOF {
		err = mapErr(err, f.info.Name)
	}
	return n, err
}

func (f *file) Close() error { return f.f.Close() }

func (f *file) Info() fs.Info { return f.info }

func (f *file) Version() (fs.Version, bool) {
	if !f.eof {
		return fs.Version{}, false
	}
	return f.hash.Version(), true
}

// ReadAll reads a whole regular file of at most maxBytes bytes. A file that
// grows past maxBytes while it is read is a limit failure too.
func (p *Provider) ReadAll(ctx context.Context, root, name string, maxBytes int64) ([]byte, fs.Version, error) {
	f, fi, err := p.openRegular(ctx, root, name)
	if err != nil {
		return nil, fs.Version{}, err
	}
	defer f.Close()
	data, err := readBounded(ctx, f, fi.Size(), maxBytes, name)
	if err != nil {
		return nil, fs.Version{}, err
	}
	return data, fs.VersionOf(data), nil
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
			return nil, mapErr(err, name)
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

// ReadDir lists a directory: names first (cheap), then an lstat of only
// the entries returned, each relative to the directory opened once.
func (p *Provider) ReadDir(ctx context.Context, root, name string, max int) ([]fs.Info, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, fault.As(err)
	}
	if name != "." {
		if err := checkName(name); err != nil {
			return nil, 0, err
		}
	}
	r, err := p.root(root)
	if err != nil {
		return nil, 0, err
	}
	dir, err := r.OpenRoot(name)
	if err != nil {
		return nil, 0, mapErr(err, name)
	}
	defer dir.Close()
	names, err := readNames(ctx, dir, name)
	if err != nil {
		return nil, 0, err
	}
	total := len(names)
	if max > 0 && len(names) > max {
		names = names[:max]
	}
	out := make([]fs.Info, 0, len(names))
	for _, n := range names {
		fi, err := dir.Lstat(n)
		if err != nil {
			if os.IsNotExist(err) {
				total-- // removed since it was listed
				continue
			}
			return nil, 0, mapErr(err, path.Join(name, n))
		}
		out = append(out, infoOf(path.Join(name, n), fi))
	}
	return out, total, nil
}

// readNames returns the sorted entry names of dir, staging files left out,
// failing with limit past limits.WalkMaxFiles entries.
func readNames(ctx context.Context, dir *os.Root, name string) ([]string, error) {
	d, err := dir.Open(".")
	if err != nil {
		return nil, mapErr(err, name)
	}
	defer d.Close()
	var names []string
	for {
		batch, err := d.Readdirnames(1024)
		for _, n := range batch {
			if !fs.IsTempName(n) {
				names = append(names, n)
			}
		}
		if len(names) > limits.WalkMaxFiles {
			return nil, fault.LimitExceeded(name+": directory entries", limits.WalkMaxFiles, int64(len(names)))
		}
		if err == io.EOF || len(batch) == 0 {
			break
		}
		if err != nil {
			return nil, mapErr(err, name)
		}
		if err := ctx.Err(); err != nil {
			return nil, fault.As(err)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Walk visits name and everything under it in lexical order. It descends
// into a directory through an os.Root opened on that directory from its
// parent's, so a directory swapped for a symlink is never followed out.
func (p *Provider) Walk(ctx context.Context, root, name string, fn fs.WalkFunc) error {
	if err := ctx.Err(); err != nil {
		return fault.As(err)
	}
	if name != "." {
		if err := checkName(name); err != nil {
			return err
		}
	}
	r, err := p.root(root)
	if err != nil {
		return err
	}
	fi, err := r.Lstat(name)
	if err != nil {
		return mapErr(err, name)
	}
	err = fn(infoOf(name, fi))
	if err != nil || !fi.IsDir() {
		if err == iofs.SkipDir || err == iofs.SkipAll {
			err = nil
		}
		return err
	}
	dir, err := r.OpenRoot(name)
	if err != nil {
		return mapErr(err, name)
	}
	defer dir.Close()
	err = walkDir(ctx, dir, name, fn, 1)
	if err == iofs.SkipAll {
		err = nil
	}
	return err
}

func walkDir(ctx context.Context, dir *os.Root, name string, fn fs.WalkFunc, depth int) error {
	if depth > limits.WalkMaxDepth {
		return fault.LimitExceeded(name+": directory depth", limits.WalkMaxDepth, int64(depth))
	}
	names, err := readNames(ctx, dir, name)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return fault.As(err)
		}
		fi, err := dir.Lstat(n)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return mapErr(err, path.Join(name, n))
		}
		child := n
		if name != "." {
			child = name + "/" + n
		}
		switch err := fn(infoOf(child, fi)); {
		case err == iofs.SkipDir:
			continue
		case err != nil:
			return err
		}
		if !fi.IsDir() {
			continue
		}
		sub, err := dir.OpenRoot(n)
		if err != nil {
			return mapErr(err, child)
		}
		// A directory replaced (by a symlink, say) since the lstat is not
		// the one fn was told about: skip it rather than walk another.
		if st, err := sub.Stat("."); err != nil || !os.SameFile(fi, st) {
			sub.Close()
			continue
		}
		err = walkDir(ctx, sub, child, fn, depth+1)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
