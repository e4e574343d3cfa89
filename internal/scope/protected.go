package scope

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/capkit/capkit/capability"
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

// refuse runs c on the root-relative name (cleaned, slash-separated) in
// root, one of the scope's roots: a write check refuses a name that is a
// protected path or lies under one (creating, replacing, editing or
// removing it); a rename check refuses a name that holds one too, since
// renaming a directory moves everything in it and renaming one into
// place creates everything in it.
func (s *Scope) refuse(c check, root, name string) error {
	target := filepath.Join(root, filepath.FromSlash(name))
	for _, q := range s.protected.Every(append([]string{root}, s.roots...)) {
		switch {
		case capability.WithinFolded(q, target):
			return fault.New(fault.Denied, "%s is protected: %s", clip.Text(s.show(target)), protectedReason).By("protected")
		case c == renameCheck && capability.WithinFolded(target, q):
			return fault.New(fault.Denied, "%s holds the protected %s: %s", clip.Text(s.show(target)), clip.Text(s.show(q)), protectedReason).By("protected")
		}
	}
	return nil
}

// protectedReason ends every refusal: why, and what was done.
const protectedReason = "the host keeps .git, capkit.toml and its [run] protect entries read-only for every tool (it reads or runs them later); nothing was changed"

// show is how a refusal names the host path abs: relative to the scope's
// first root when inside it.
func (s *Scope) show(abs string) string {
	if len(s.roots) > 0 && capability.Within(s.roots[0], abs) {
		if rel, err := filepath.Rel(s.roots[0], abs); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return abs
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
	return fault.New(fault.Denied, "%s goes through a symbolic link: %s", clip.Text(name), fault.As(err).Public()).By("symlinks")
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
	return "", fault.New(fault.Denied, "%s leads out of the root", clip.Text(name)).By("roots")
}
