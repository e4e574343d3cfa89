package capability

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
)

// defaultProtected are protected in every root whatever the host adds:
// what the host's git and capkit read and run later.
var defaultProtected = []string{".git", "capkit.toml"}

// Protected is the set of paths no tool may change, whatever its grant:
// the repository (.git and everything under it), the configuration
// (capkit.toml) and the host's own entries ([run] protect). The host's git
// and capkit read and run them later (a planted hook or core.fsmonitor is
// code run on the host; a planted capkit.toml grants more at the next
// start), so writing one would reach past every grant.
//
// Relative entries apply in every root, absolute ones where they are; an
// absolute entry that is a root itself is left out (it would make the
// whole root read-only). Paths are compared element by element and
// case-insensitively, so a case-folding filesystem cannot reach .git as
// .GIT. The zero value protects .git and capkit.toml.
type Protected struct {
	extra []string
}

// NewProtected returns the default set with entries added: clean
// relative paths or absolute paths (host/config validates [run] protect).
func NewProtected(entries ...string) Protected {
	return Protected{extra: slices.Clone(entries)}
}

// Paths lists the protected paths in roots (absolute, cleaned
// directories), absolute and without duplicates.
func (p Protected) Paths(roots []string) []string {
	var out []string
	add := func(q string) {
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	for _, root := range roots {
		for _, e := range append(slices.Clone(defaultProtected), p.extra...) {
			if !filepath.IsAbs(e) {
				add(filepath.Join(root, e))
			} else if e = filepath.Clean(e); e != root && Within(root, e) {
				add(e)
			}
		}
	}
	return out
}

// CheckWrite refuses, with denied, a change to name in root (a
// root-relative, cleaned, slash-separated name, as files.Resolve returns
// it) that is a protected path of roots or lies under one: creating,
// replacing, editing or removing it. roots are the roots the tool
// resolved name against; the first is where relative names start.
func (p Protected) CheckWrite(roots []string, root, name string) error {
	return p.check(roots, root, name, false)
}

// CheckRename is CheckWrite for a name a directory may be renamed from or
// to: it also refuses a name that holds a protected path, since renaming
// a directory moves everything in it and renaming one into place creates
// everything in it.
func (p Protected) CheckRename(roots []string, root, name string) error {
	return p.check(roots, root, name, true)
}

func (p Protected) check(roots []string, root, name string, holding bool) error {
	target := filepath.Join(root, filepath.FromSlash(name))
	show := func(abs string) string {
		if len(roots) > 0 && Within(roots[0], abs) {
			if rel, err := filepath.Rel(roots[0], abs); err == nil {
				return filepath.ToSlash(rel)
			}
		}
		return abs
	}
	for _, q := range p.Paths(append([]string{root}, roots...)) {
		switch {
		case withinFolded(q, target):
			return fault.New(fault.Denied, "%s is protected: %s", clip.Text(show(target)), protectedReason)
		case holding && withinFolded(target, q):
			return fault.New(fault.Denied, "%s holds the protected %s: %s", clip.Text(show(target)), clip.Text(show(q)), protectedReason)
		}
	}
	return nil
}

// protectedReason ends every refusal: why, and what was done.
const protectedReason = "the host keeps .git, capkit.toml and its [run] protect entries read-only for every tool (it reads or runs them later); nothing was changed"

// withinFolded reports whether the cleaned absolute path p is dir or lies
// under it, comparing whole elements case-insensitively.
func withinFolded(dir, p string) bool {
	de := strings.Split(strings.TrimSuffix(dir, string(filepath.Separator)), string(filepath.Separator))
	pe := strings.Split(p, string(filepath.Separator))
	if len(pe) < len(de) {
		return false
	}
	for i, e := range de {
		if !strings.EqualFold(e, pe[i]) {
			return false
		}
	}
	return true
}
