package atfile

import (
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
)

// HostPath is the directory's absolute path on the host now, as the
// kernel names its descriptor (symlinks resolved).
func (d *Dir) HostPath() (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(d.f.Fd())))
	if err != nil {
		return "", fault.Wrap(fault.IO, err, "locating a directory failed")
	}
	return p, nil
}

// CheckBoth runs check (a capability.Protected method) on the
// root-relative name rel as spelled and as it resolves on disk: os.Root
// follows a symlink inside the root before the last element, so a
// symlink to .git would otherwise lead a write into it. The resolved name
// is that of rel's deepest existing directory followed by the rest of
// rel. A change racing with the check (a directory swapped for a symlink
// in between) is not seen.
func CheckBoth(roots []string, root, rel string, check func(roots []string, root, name string) error) error {
	if err := check(roots, root, rel); err != nil {
		return err
	}
	resolved, err := resolvedName(root, rel)
	if err != nil {
		return err
	}
	if resolved == rel {
		return nil
	}
	if err := check(roots, root, resolved); err != nil {
		return fault.New(fault.Denied, "%s goes through a symbolic link: %s", clip.Text(rel), fault.As(err).Public())
	}
	return nil
}

// resolvedName is rel with its deepest existing directory replaced by
// the root-relative name that directory has on disk.
func resolvedName(root, rel string) (string, error) {
	r, release, err := AcquireRoot(root, "root")
	if err != nil {
		return "", err
	}
	defer release()
	base, err := selfPath(r)
	if err != nil {
		return "", err
	}
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
		inRoot, err := filepath.Rel(base, host)
		if err != nil || inRoot == ".." || strings.HasPrefix(inRoot, "../") {
			return "", fault.New(fault.Denied, "%s leads out of the root", clip.Text(dir))
		}
		rest := rel
		if dir != "." {
			rest = rel[len(dir)+1:]
		}
		return path.Join(filepath.ToSlash(inRoot), rest), nil
	}
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
