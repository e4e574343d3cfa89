package atfile

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
)

// ProtectedCheck is a capability.Protected method (CheckWrite or
// CheckRename): it refuses a change to name in root, one of roots.
type ProtectedCheck func(roots []string, root, name string) error

// HostPath is the directory's absolute path on the host now, as the
// kernel names its descriptor (symlinks resolved). The kernel names none
// of PATH_MAX bytes or more, and none without /proc.
func (d *Dir) HostPath() (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(d.f.Fd())))
	switch {
	case errors.Is(err, syscall.ENAMETOOLONG):
		return "", fault.Wrap(fault.Limit, err, "a directory's path on the host is too long for the kernel to name (PATH_MAX), so a change in it cannot be checked against the protected paths; nothing was changed: use a shallower directory")
	case errors.Is(err, fs.ErrNotExist):
		return "", fault.Wrap(fault.Unavailable, err, "/proc/self/fd cannot be read (is /proc mounted?), so a directory cannot be checked against the protected paths; nothing was changed")
	case err != nil:
		return "", fault.Wrap(fault.IO, err, "locating a directory failed")
	}
	return p, nil
}

// CheckBoth runs check on the root-relative name rel as spelled and as it
// resolves on disk: os.Root follows a symlink inside the root before the
// last element, so a symlink to .git would otherwise lead a change into
// it. The resolved name is that of rel's deepest existing directory
// followed by the rest of rel. It runs before anything is created; a
// directory swapped for a symlink after it is CheckOpened's to catch.
func CheckBoth(roots []string, root, rel string, check ProtectedCheck) error {
	if err := check(roots, root, rel); err != nil {
		return err
	}
	resolved, err := resolvedName(root, rel)
	if err != nil || resolved == rel {
		return err
	}
	return throughLink(rel, resolved, check(roots, root, resolved))
}

// CheckOpened runs check on name as the caller spelled it and on base, an
// entry of the directory d opened inside root (one of roots), by the
// root-relative name it has on disk now. It is bound to the descriptor
// the change is then made through, so neither a symlink nor a directory
// swapped for one after an earlier check can lead the change elsewhere.
// check is given roots too: the name on disk may lie in another of them
// nested in root, whose protected paths hold there.
func CheckOpened(roots []string, root string, d *Dir, base, name string, check ProtectedCheck) error {
	if err := check(roots, root, name); err != nil {
		return err
	}
	r, release, err := AcquireRoot(root, "root")
	if err != nil {
		return err
	}
	defer release()
	dir, err := d.HostPath()
	if err != nil {
		return err
	}
	rel, err := relName(r, filepath.Join(dir, base), name)
	if err != nil {
		return err
	}
	return throughLink(name, rel, check(roots, root, rel))
}

// CheckOpenedIn is CheckOpened for a directory opened as an os.Root.
func CheckOpenedIn(roots []string, root string, dir *os.Root, base, name string, check ProtectedCheck) error {
	d, err := openSelfIn(dir, "the directory")
	if err != nil {
		return err
	}
	defer d.Close()
	return CheckOpened(roots, root, d, base, name, check)
}

// throughLink says that name reached the protected resolved through a
// symbolic link.
func throughLink(name, resolved string, err error) error {
	if err == nil || resolved == name {
		return err
	}
	return fault.New(fault.Denied, "%s goes through a symbolic link: %s", clip.Text(name), fault.As(err).Public())
}

// resolvedName is rel with its deepest existing directory replaced by
// the root-relative name that directory has on disk.
func resolvedName(root, rel string) (string, error) {
	r, release, err := AcquireRoot(root, "root")
	if err != nil {
		return "", err
	}
	defer release()
	for dir := path.Dir(rel); ; dir = path.Dir(dir) {
		d, err := OpenDirIn(r, dir)
		if fault.CodeOf(err) == fault.NotFound && dir != "." {
			continue
		}
		if err != nil {
			// The change itself opens dir the same way and fails.
			return rel, nil
		}
		host, err := d.HostPath()
		d.Close()
		if err != nil {
			return "", err
		}
		if dir == "." {
			return relName(r, filepath.Join(host, rel), rel)
		}
		return relName(r, filepath.Join(host, rel[len(dir)+1:]), rel)
	}
}

// relName is the host path p as a slash-separated name inside the root r;
// name is how the caller spelled it. The root's host path is remembered
// and looked up again when p is not under it (the root moved since).
func relName(r *os.Root, p, name string) (string, error) {
	for _, fresh := range []bool{false, true} {
		top, err := RootPath(r, fresh)
		if err != nil {
			return "", err
		}
		rel, err := filepath.Rel(top, p)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.ToSlash(rel), nil
		}
	}
	return "", fault.New(fault.Denied, "%s leads out of the root", clip.Text(name))
}

// RootPath is the host path of the root r, remembered for a cached root
// unless fresh is set.
func RootPath(r *os.Root, fresh bool) (string, error) {
	if !fresh {
		roots.Lock()
		p, ok := roots.host[r]
		roots.Unlock()
		if ok {
			return p, nil
		}
	}
	p, err := selfPath(r)
	if err != nil {
		return "", err
	}
	roots.Lock()
	if _, cached := roots.dev[r]; cached {
		roots.host[r] = p
	}
	roots.Unlock()
	return p, nil
}

// selfPath is the host path of r's own directory.
func selfPath(r *os.Root) (string, error) {
	d, err := openSelfIn(r, "the root")
	if err != nil {
		return "", err
	}
	defer d.Close()
	return d.HostPath()
}
