package local

import (
	"context"
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/limits"
)

func infoOf(name string, fi os.FileInfo) files.Info {
	return files.Info{Name: name, Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime()}
}

// Stat describes name without following a final symlink.
func (p *Provider) Stat(ctx context.Context, root, name string) (files.Info, error) {
	if err := ctx.Err(); err != nil {
		return files.Info{}, fault.As(err)
	}
	if err := checkName(name); err != nil {
		return files.Info{}, err
	}
	r, err := p.root(root)
	if err != nil {
		return files.Info{}, err
	}
	fi, err := r.Lstat(name)
	if err != nil {
		return files.Info{}, atfile.Fault(err, name)
	}
	return infoOf(name, fi), nil
}

// Open opens a regular file for reading: stat first, so that opening never
// touches a device or FIFO, then fstat the open file, so that one swapped
// in between is refused as well.
func (p *Provider) Open(ctx context.Context, root, name string) (files.File, error) {
	f, fi, err := p.openRegular(ctx, root, name)
	if err != nil {
		return nil, err
	}
	return &file{f: f, info: infoOf(name, fi), hash: files.NewVersionHash()}, nil
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
		return nil, nil, atfile.Fault(err, name)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, atfile.NotRegular(name, fi.Mode())
	}
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, atfile.Fault(err, name)
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, atfile.Fault(err, name)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, atfile.NotRegular(name, fi.Mode())
	}
	return f, fi, nil
}

// file hashes what is read sequentially, so a reader that streams the
// whole file learns its version without a second pass.
type file struct {
	f    *os.File
	info files.Info
	hash *files.VersionHash
	eof  bool
}

func (f *file) Read(b []byte) (int, error) {
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

// ReadAll reads a whole regular file of at most maxBytes bytes. A file that
// grows past maxBytes while it is read is a limit failure too.
func (p *Provider) ReadAll(ctx context.Context, root, name string, maxBytes int64) ([]byte, files.Version, error) {
	f, fi, err := p.openRegular(ctx, root, name)
	if err != nil {
		return nil, files.Version{}, err
	}
	defer f.Close()
	data, err := readBounded(ctx, f, fi.Size(), maxBytes, name)
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
// directory records them (entries), relative to the directory opened once,
// with no stat per entry.
func (p *Provider) ReadDir(ctx context.Context, root, name string, max int) ([]files.DirEntry, int, error) {
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
	d, err := openDir(r, name, false)
	if err != nil {
		return nil, 0, err
	}
	defer d.close()
	entries, err := d.entries(ctx, name)
	if err != nil {
		return nil, 0, err
	}
	total := len(entries)
	if max > 0 && len(entries) > max {
		entries = entries[:max]
	}
	for i := range entries {
		entries[i].Name = join(name, entries[i].Name)
	}
	return entries, total, nil
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// names returns the sorted entry names of d, staging files left out,
// failing with limit past limits.WalkMaxFiles entries.
func (d *dirHandle) names(ctx context.Context, display string) ([]string, error) {
	var names []string
	for {
		batch, err := d.f.Readdirnames(1024)
		for _, n := range batch {
			if !files.IsTempName(n) {
				names = append(names, n)
			}
		}
		if len(names) > limits.WalkMaxFiles {
			return nil, fault.LimitExceeded(display+": directory entries", limits.WalkMaxFiles, int64(len(names)))
		}
		if err == io.EOF || len(batch) == 0 {
			break
		}
		if err != nil {
			return nil, atfile.Fault(err, display)
		}
		if err := ctx.Err(); err != nil {
			return nil, fault.As(err)
		}
	}
	slices.Sort(names)
	return names, nil
}

func infoFromStat(name string, st *unix.Stat_t) files.Info {
	return files.Info{
		Name:    name,
		Size:    st.Size,
		Mode:    modeOf(st) | iofs.FileMode(st.Mode&0o777),
		ModTime: time.Unix(st.Mtim.Unix()),
	}
}

// sub opens the directory entry name of d, refusing a symlink (O_NOFOLLOW)
// and anything that is not a directory (O_DIRECTORY, so a FIFO swapped in
// is never opened); ok is false when it is no longer a directory.
func (d *dirHandle) sub(name string) (*dirHandle, bool, error) {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		return err
	})
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	f := os.NewFile(uintptr(fd), name)
	return &dirHandle{f: f, fd: fd}, true, nil
}

// same reports whether d is the directory st describes.
func (d *dirHandle) same(st *unix.Stat_t) bool {
	var cur unix.Stat_t
	return unix.Fstat(d.fd, &cur) == nil && cur.Dev == st.Dev && cur.Ino == st.Ino
}

// Walk visits name and everything under it in lexical order. name itself
// is followed if it is a symlink that stays inside the root; nothing under
// it is. It descends
// from an open directory to a child with openat(O_NOFOLLOW|O_DIRECTORY),
// checking that the child is the directory just examined, so a directory
// swapped for a symlink or a FIFO is never followed or opened.
func (p *Provider) Walk(ctx context.Context, root, name string, fn files.WalkFunc) error {
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
	fi, err := r.Stat(name) // the starting point may be a symlink inside the root
	if err != nil {
		return atfile.Fault(err, name)
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return fault.New(fault.InvalidInput, "%s: not a directory or regular file", name)
	}
	err = fn(infoOf(name, fi))
	if err != nil || !fi.IsDir() {
		if err == iofs.SkipDir || err == iofs.SkipAll {
			err = nil
		}
		return err
	}
	d, err := openDir(r, name, false)
	if err != nil {
		return err
	}
	defer d.close()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		var cur unix.Stat_t
		if unix.Fstat(d.fd, &cur) != nil || cur.Dev != st.Dev || cur.Ino != st.Ino {
			return nil // replaced since the lstat
		}
	}
	err = walkDir(ctx, d, name, fn, 1)
	if err == iofs.SkipAll {
		err = nil
	}
	return err
}

func walkDir(ctx context.Context, d *dirHandle, name string, fn files.WalkFunc, depth int) error {
	if depth > limits.WalkMaxDepth {
		return fault.LimitExceeded(name+": directory depth", limits.WalkMaxDepth, int64(depth))
	}
	names, err := d.names(ctx, name)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return fault.As(err)
		}
		child := join(name, n)
		st, ok, err := d.lstat(n)
		if err != nil {
			return atfile.Fault(&os.PathError{Op: "fstatat", Path: child, Err: err}, child)
		}
		if !ok {
			continue
		}
		info := infoFromStat(child, &st)
		switch err := fn(info); {
		case err == iofs.SkipDir:
			continue
		case err != nil:
			return err
		}
		if !info.IsDir() {
			continue
		}
		sub, ok, err := d.sub(n)
		if err != nil {
			return atfile.Fault(&os.PathError{Op: "openat", Path: child, Err: err}, child)
		}
		if !ok {
			continue
		}
		if !sub.same(&st) {
			// replaced since the lstat: not the directory fn was told about
			sub.close()
			continue
		}
		err = walkDir(ctx, sub, child, fn, depth+1)
		sub.close()
		if err != nil {
			return err
		}
	}
	return nil
}
