package capability

import (
	"path/filepath"
	"slices"
	"strings"
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
// Relative entries apply in every root, absolute ones where they are. The
// roots are those the host configured (WithRoots) and any root a check
// is given that lies in none of them; a path that is one of these roots
// is left out (it would make that whole root read-only). So a check made
// through one root also covers a root nested in it, and a root narrowed
// to a directory inside a configured root keeps that root's protected
// paths where they are. Paths are compared element by element and
// case-insensitively (WithinFolded). The zero value protects .git and
// capkit.toml.
//
// Protected is the set, not the check: internal/scope checks every change
// against it, inside the change (a name as spelled and as its directory
// is named on disk), and the container holds its Paths read-only.
type Protected struct {
	extra []string
	roots []string
}

// NewProtected returns the default set with entries added: clean
// relative paths or absolute paths (host/config validates [run] protect).
func NewProtected(entries ...string) Protected {
	return Protected{extra: slices.Clone(entries)}
}

// Relative are the entries that apply in every root: .git, capkit.toml
// and the relative entries added.
func (p Protected) Relative() []string {
	return slices.Concat(defaultProtected, slices.DeleteFunc(slices.Clone(p.extra), filepath.IsAbs))
}

// WithRoots returns p knowing roots (absolute, cleaned directories):
// every root the host configured. A check made through one root (a
// check on an opened directory) needs them when roots nest: a symlink or a directory renamed meanwhile can lead a
// change through the outer root into the inner one's .git.
func (p Protected) WithRoots(roots ...string) Protected {
	return Protected{extra: p.extra, roots: slices.Concat(p.roots, roots)}
}

// Paths lists the protected paths that lie inside roots (absolute,
// cleaned directories), absolute and without duplicates; never a root
// itself. A root that is or lies inside a protected path holds none
// (Covers says so).
func (p Protected) Paths(roots []string) []string {
	var out []string
	all := p.Every(roots)
	for _, root := range roots {
		for _, q := range all {
			if q != root && Within(root, q) && !slices.Contains(out, q) {
				out = append(out, q)
			}
		}
	}
	return out
}

// Covers reports whether the directory dir (absolute, cleaned) is a
// protected path or lies under one, so that nothing in it may change: a
// root narrowed to .git, say.
func (p Protected) Covers(dir string) bool {
	return slices.ContainsFunc(p.Every([]string{dir}), func(q string) bool { return WithinFolded(q, dir) })
}

// Every is every protected path of the configured roots (WithRoots) and
// of the roots given that lie in none of them, except these roots
// themselves: what a change in one of the given roots is checked against
// (internal/scope does, inside each change).
func (p Protected) Every(given []string) []string {
	bases := slices.Clone(p.roots)
	for _, r := range given {
		if !slices.ContainsFunc(p.roots, func(c string) bool { return Within(c, r) }) && !slices.Contains(bases, r) {
			bases = append(bases, r)
		}
	}
	var out []string
	add := func(q string) {
		if !slices.Contains(out, q) && !slices.Contains(bases, q) && slices.ContainsFunc(bases, func(b string) bool { return Within(b, q) }) {
			out = append(out, q)
		}
	}
	for _, b := range bases {
		for _, e := range defaultProtected {
			add(filepath.Join(b, e))
		}
		for _, e := range p.extra {
			if filepath.IsAbs(e) {
				add(filepath.Clean(e))
			} else {
				add(filepath.Join(b, e))
			}
		}
	}
	return out
}

// WithinFolded reports whether the cleaned absolute path p is dir or lies
// under it, comparing whole elements case-insensitively: how a protected
// path is matched, so that a case-folding filesystem cannot reach .git as
// .GIT.
func WithinFolded(dir, p string) bool {
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
