package scope

import (
	"context"
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/limits"
)

// isRoot reports whether t names a directory that has no parent to open
// it through: its root, or the host's /.
func (t *Target) isRoot() bool {
	return t.s != nil && t.name == "." || t.s == nil && t.name == "/"
}

// openParent opens, once, the directory holding t (through the root, or
// for a host target at its host path) and returns it with t's last
// element.
func (t *Target) openParent() (*atfile.Dir, string, error) {
	if t.parent != nil {
		return t.parent, t.base, nil
	}
	var d *atfile.Dir
	var base string
	var err error
	if t.s == nil {
		d, base, err = atfile.OpenParent(t.name)
	} else {
		var dir string
		if dir, base, err = splitRel(t.name); err != nil {
			return nil, "", err
		}
		d, err = atfile.OpenDirIn(t.r, dir)
	}
	if err != nil {
		return nil, "", err
	}
	t.parent, t.base = d, base
	return d, base, nil
}

// Parent is the directory holding t, opened once (t's Close closes it),
// with t's last element. The root itself has none: invalid_input.
func (t *Target) Parent() (*Dir, string, error) {
	d, base, err := t.openParent()
	if err != nil {
		return nil, "", err
	}
	if t.wrapped == nil {
		t.wrapped = &Dir{d: d}
	}
	return t.wrapped, base, nil
}

// openSelf opens the directory t names when it has no parent.
func (t *Target) openSelf() (*atfile.Dir, Stat, error) {
	var d *atfile.Dir
	var err error
	if t.s == nil {
		return atfile.OpenTree(t.name)
	}
	if d, err = atfile.OpenDirIn(t.r, "."); err != nil {
		return nil, Stat{}, err
	}
	st, err := atfile.Fstat(d.File())
	if err != nil {
		d.Close()
		return nil, Stat{}, err
	}
	return d, st, nil
}

// Lstat describes t without following a symlink as its last element.
// role names it in messages.
func (t *Target) Lstat(role string) (Stat, error) {
	if t.isRoot() {
		d, st, err := t.openSelf()
		if err != nil {
			return Stat{}, err
		}
		d.Close()
		return st, nil
	}
	d, base, err := t.openParent()
	if err != nil {
		return Stat{}, err
	}
	return d.Lstat(base, role)
}

// OpenRegular opens t for reading if it is a regular file, never
// following a symlink as its last element (atfile.Dir.OpenRegular: no
// FIFO, device or staging file; a file swapped in between the look and
// the open is refused with integrity). role names it in messages.
func (t *Target) OpenRegular(role string) (*os.File, Stat, error) {
	if t.isRoot() {
		return nil, Stat{}, atfile.NotRegular(role, iofs.ModeDir)
	}
	d, base, err := t.openParent()
	if err != nil {
		return nil, Stat{}, err
	}
	return d.OpenRegular(base, role)
}

// OpenFollowing is OpenRegular following a symlink as the last element,
// one hop at a time (at most limits.SymlinkMaxHops), while it stays
// inside the root. A file replaced by a rename while it is opened (as an
// atomic write does) is looked at again. A host target's last element is
// never followed.
func (t *Target) OpenFollowing(role string) (*os.File, Stat, error) {
	if t.s == nil || t.isRoot() {
		return t.OpenRegular(role)
	}
	d, base, err := t.openParent()
	if err != nil {
		return nil, Stat{}, err
	}
	cur := t.name
	for hops, swaps := 0, 0; ; hops++ {
		f, st, err := d.OpenRegular(base, role)
		if errors.Is(err, atfile.ErrChanged) && swaps < maxSwaps {
			swaps++
			continue
		}
		if !errors.Is(err, atfile.ErrSymlink) {
			t.closeHop(d)
			return f, st, err
		}
		link, err := d.Readlink(base, role)
		t.closeHop(d)
		if err != nil {
			return nil, Stat{}, err
		}
		if hops == limits.SymlinkMaxHops {
			return nil, Stat{}, fault.New(fault.Denied, "%s: more than %d symbolic links in a row", role, limits.SymlinkMaxHops).By("symlinks")
		}
		if cur, err = follow(role, cur, link); err != nil {
			return nil, Stat{}, err
		}
		var dir string
		if dir, base, err = splitRel(cur); err != nil {
			return nil, Stat{}, err
		}
		if d, err = atfile.OpenDirIn(t.r, dir); err != nil {
			return nil, Stat{}, err
		}
	}
}

// closeHop closes a directory a symlink led OpenFollowing to (not t's
// parent, which t keeps).
func (t *Target) closeHop(d *atfile.Dir) {
	if d != t.parent {
		d.Close()
	}
}

// maxSwaps bounds how often OpenFollowing looks again at a file replaced
// while it was being opened.
const maxSwaps = 3

// follow returns the root-relative name the symlink cur, whose target is
// link, points to: refused if it leads out of the root or into the
// staging namespace.
func follow(role, cur, link string) (string, error) {
	if path.IsAbs(link) {
		return "", fault.Wrap(fault.Denied, atfile.ErrSymlink, "%s is a symbolic link to an absolute path; it leads out of the root", role).By("roots")
	}
	next := path.Join(path.Dir(cur), link)
	switch {
	case next == "..", strings.HasPrefix(next, "../"):
		return "", fault.Wrap(fault.Denied, atfile.ErrSymlink, "%s is a symbolic link that leads out of the root", role).By("roots")
	case next == ".":
		return "", fault.New(fault.InvalidInput, "%s is a symbolic link to the root directory, not a regular file", role)
	case atfile.HasStagingElement(next):
		return "", atfile.Reserved(role)
	}
	return next, nil
}

// ReadAll reads the whole regular file t names (OpenFollowing), of at
// most maxBytes bytes: a larger file, also one that grows past maxBytes
// while it is read, fails with limit. role names it in messages.
func (t *Target) ReadAll(ctx context.Context, maxBytes int64, role string) ([]byte, error) {
	f, st, err := t.OpenFollowing(role)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBounded(ctx, f, st.Size, maxBytes, role)
}

// readBounded reads f to its end into one buffer sized from the stat size,
// failing with limit past maxBytes.
func readBounded(ctx context.Context, f *os.File, size, maxBytes int64, role string) ([]byte, error) {
	if size > maxBytes {
		return nil, fault.LimitExceeded(role+": file bytes", maxBytes, size)
	}
	buf := make([]byte, 0, size+1) // +1: EOF is seen without growing
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > maxBytes {
				return nil, fault.LimitExceeded(role+": file bytes", maxBytes, int64(len(buf)))
			}
			buf = slices.Grow(buf, int(min(int64(cap(buf)), maxBytes+1-int64(len(buf)))))
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, atfile.Fault(err, role)
		}
		if err := ctx.Err(); err != nil {
			return nil, fault.As(err)
		}
	}
	if int64(len(buf)) > maxBytes {
		return nil, fault.LimitExceeded(role+": file bytes", maxBytes, int64(len(buf)))
	}
	return buf, nil
}

// OpenDir opens the directory t names, following a symlink inside the
// root as any element, the last too (os.Root). Close it. role names it in
// messages.
func (t *Target) OpenDir(role string) (*Dir, error) {
	var d *atfile.Dir
	var err error
	if t.s == nil {
		d, err = atfile.OpenDir(t.name)
	} else {
		d, err = atfile.OpenDirIn(t.r, t.name)
		if errors.Is(err, syscall.ENOTDIR) {
			if fi, serr := t.r.Stat(t.name); serr == nil && !fi.IsDir() {
				return nil, atfile.NotDir(role, fi.Mode())
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return &Dir{d: d}, nil
}

// OpenTree opens the directory t names, never following a symlink as its
// last element, and returns it with its metadata. Close it. role names it
// in messages.
func (t *Target) OpenTree(role string) (*Dir, Stat, error) {
	if t.isRoot() {
		d, st, err := t.openSelf()
		if err != nil {
			return nil, Stat{}, err
		}
		return &Dir{d: d}, st, nil
	}
	if t.s == nil {
		d, st, err := atfile.OpenTree(t.name)
		if err != nil {
			return nil, Stat{}, err
		}
		return &Dir{d: d}, st, nil
	}
	p, base, err := t.openParent()
	if err != nil {
		return nil, Stat{}, err
	}
	d, st, err := p.OpenSubdir(base, role)
	if err != nil {
		return nil, Stat{}, err
	}
	return &Dir{d: d}, st, nil
}

// splitRel splits a root-relative, slash-separated name into its parent
// and last element. The root itself (".") has no parent: invalid_input.
func splitRel(rel string) (dir, name string, err error) {
	switch {
	case rel == "." || rel == "":
		return "", "", fault.New(fault.InvalidInput, "path must name an entry inside the root, not the root itself")
	case rel == ".." || strings.HasPrefix(rel, "../") || strings.HasPrefix(rel, "/"):
		return "", "", fault.New(fault.Denied, "path leads out of the root").By("roots")
	}
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return ".", rel, nil
	}
	return rel[:i], rel[i+1:], nil
}
