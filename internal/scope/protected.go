package scope

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/internal/clip"
)

// check is a protected-path check, the stronger the larger: a rename
// check refuses all a write check does and a name holding a protected
// path too.
type check uint8

const (
	noCheck check = iota
	writeCheck
	renameCheck
)

// refuse runs c on the root-relative name in root.
func (s *Scope) refuse(c check, root, name string) error {
	if c == renameCheck {
		return s.protected.CheckRename(s.roots, root, name)
	}
	return s.protected.CheckWrite(s.roots, root, name)
}

// checkParent runs c on t, whose parent is open: on t's name as spelled
// and as the parent is named on disk now. The check is bound to the
// parent's descriptor, which every change to t is then made through, so
// it is run once per Target.
func (t *Target) checkParent(c check) error {
	if t.s == nil || t.checked >= c {
		return nil
	}
	if err := t.checkOpened(t.parent, t.base, t.name, c); err != nil {
		return err
	}
	t.checked = c
	return nil
}

// checkOpened runs c on the entry base of the directory d, which name
// (root-relative) spells: as spelled, and by the root-relative name d
// has on disk now. The name on disk may lie in another root nested in
// t's, whose protected paths hold there: the check knows every root.
func (t *Target) checkOpened(d *atfile.Dir, base, name string, c check) error {
	if t.s == nil {
		return nil
	}
	if err := t.s.refuse(c, t.root, name); err != nil {
		return err
	}
	dir, err := d.HostPath()
	if err != nil {
		return err
	}
	rel, err := t.relName(filepath.Join(dir, base), name)
	if err != nil || rel == name {
		return err
	}
	return throughLink(name, rel, t.s.refuse(c, t.root, rel))
}

// checkBoth runs c on t's name as spelled and as it resolves on disk now:
// the name of its deepest existing directory, followed by the rest of
// the name. It is the check before a change whose parent does not exist
// yet; the directories made for it are checked as they are made.
func (t *Target) checkBoth(c check) error {
	if t.s == nil {
		return nil
	}
	if err := t.s.refuse(c, t.root, t.name); err != nil {
		return err
	}
	resolved, err := t.resolvedName()
	if err != nil || resolved == t.name {
		return err
	}
	return throughLink(t.name, resolved, t.s.refuse(c, t.root, resolved))
}

// throughLink says that name reached the protected resolved through a
// symbolic link.
func throughLink(name, resolved string, err error) error {
	if err == nil || resolved == name {
		return err
	}
	return fault.New(fault.Denied, "%s goes through a symbolic link: %s", clip.Text(name), fault.As(err).Public())
}

// resolvedName is t's name with its deepest existing directory replaced
// by the root-relative name that directory has on disk.
func (t *Target) resolvedName() (string, error) {
	rel := t.name
	for dir := path.Dir(rel); ; dir = path.Dir(dir) {
		d, err := atfile.OpenDirIn(t.r, dir)
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
			return t.relName(filepath.Join(host, rel), rel)
		}
		return t.relName(filepath.Join(host, rel[len(dir)+1:]), rel)
	}
}

// relName is the host path p as a slash-separated name inside t's root;
// name is how the caller spelled it. The root's host path is remembered
// and looked up again when p is not under it (the root moved since).
func (t *Target) relName(p, name string) (string, error) {
	for _, fresh := range []bool{false, true} {
		top, err := atfile.RootPath(t.r, fresh)
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
