package scope

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/limits"
)

// Scope is what one call may reach: the roots granted its effect (the
// first is where relative paths start) and the paths no change may
// reach. It is a value to make per call; it holds nothing open.
type Scope struct {
	roots     []string
	protected capability.Protected
	// effect and all say, for a path under a root granted only other
	// effects, that the path is not granted for this one.
	effect capability.Effect
	all    []string
}

// New is the scope of a call of effect by a session holding caps.
func New(caps capability.Set, effect capability.Effect, protected capability.Protected) *Scope {
	return &Scope{roots: caps.Roots(effect), protected: protected, effect: effect, all: caps.AllRoots()}
}

// In is the scope of roots (absolute, cleaned directories; the first is
// where relative paths start), for a caller that holds roots rather than
// capabilities.
func In(roots []string, protected capability.Protected) *Scope {
	return &Scope{roots: roots, protected: protected}
}

// Roots are the scope's roots.
func (s *Scope) Roots() []string { return s.roots }

// Target is one path resolved in a scope (or, from Host, a host path).
// It holds its root and, once an operation opened it, its parent
// directory: Close it when done. A Target is for one goroutine.
type Target struct {
	s       *Scope // nil for a host target
	root    string // "" for a host target
	name    string // root-relative, slash-separated, cleaned; the host path for a host target
	display string

	r       *os.Root
	release func()
	// parent is the directory holding name once opened, base name's last
	// element; checked the strongest protected check passed on it.
	parent  *atfile.Dir
	base    string
	wrapped *Dir
	checked check
}

// Resolve maps a caller's path onto one of the scope's roots and acquires
// that root (atfile.AcquireRoot: opened and checked once per process).
//
// Resolve is lexical: it never looks at the path on disk, and guarantees
// that the name it gives, cleaned, is the root itself or lies under it.
// Refused with invalid_input: an empty path, NUL and other control bytes,
// invalid UTF-8, a leading "~" (never expanded), leading or trailing
// spaces and quotes (a quoting mistake, and a way to name a look-alike
// file), any element in the staging namespace (atfile.StagingPrefix);
// with limit: a path longer than limits.PathMaxBytes; with denied: an
// absolute path outside every root, a relative one climbing out of the
// first, and a path under a root granted only other effects. Percent
// escapes are never decoded: "%2e%2e" is a file name.
func (s *Scope) Resolve(p string) (*Target, error) {
	root, rel, err := s.lexical(p)
	if err != nil {
		return nil, err
	}
	return acquire(s, root, rel)
}

// Lexical is which root p lies in and its name there, as Resolve finds
// them, without acquiring the root: for a caller that names where a path
// leads (a script's provenance labels) and opens nothing.
func (s *Scope) Lexical(p string) (root, rel string, err error) { return s.lexical(p) }

// lexical is Resolve without the root: which root p lies in and its name
// there.
func (s *Scope) lexical(p string) (root, rel string, err error) {
	root, rel, err = resolve(s.roots, p)
	if fault.CodeOf(err) == fault.Denied && len(s.roots) > 0 && s.effect != "" && filepath.IsAbs(p) {
		if _, _, other := resolve(s.all, p); other == nil {
			return "", "", fault.New(fault.Denied, "%s is not granted under that root (it may be read-only)", s.effect).By("roots:" + string(s.effect))
		}
	}
	return root, rel, err
}

// acquire makes the Target of rel in root, holding the root.
func acquire(s *Scope, root, rel string) (*Target, error) {
	r, release, err := atfile.AcquireRoot(root, "root")
	if err != nil {
		if fault.CodeOf(err) == fault.Denied {
			return nil, err
		}
		return nil, fault.Wrap(fault.Unavailable, err, "a granted root cannot be opened")
	}
	return &Target{s: s, root: root, name: rel, display: display(s.roots, root, rel), r: r, release: release}, nil
}

// Host is the Target of the absolute host path p, for a caller the host
// trusts with it (the command line, a library caller): symlinks before
// its last element are followed, as the host names them, and no change
// is checked against a protected set.
func Host(p string) (*Target, error) {
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return nil, fault.New(fault.InvalidInput, "path is empty or contains a NUL byte")
	}
	if !filepath.IsAbs(p) {
		return nil, fault.New(fault.InvalidInput, "path must be absolute")
	}
	c := filepath.Clean(p)
	return &Target{name: c, display: c}, nil
}

// Join is the Target of rel (slash-separated, relative) under t, in t's
// root: rel may not climb out of t, nor name a staging entry.
func (t *Target) Join(rel string) (*Target, error) {
	if err := checkPathText(rel); err != nil {
		return nil, err
	}
	c := path.Clean(filepath.ToSlash(rel))
	switch {
	case path.IsAbs(c):
		return nil, fault.New(fault.InvalidInput, "%s must be relative", rel)
	case c == ".." || strings.HasPrefix(c, "../"):
		return nil, fault.New(fault.Denied, "%s climbs out of its directory", rel).By("roots")
	case atfile.HasStagingElement(c):
		return nil, atfile.Reserved(c)
	}
	if t.s == nil {
		return &Target{name: filepath.Join(t.name, filepath.FromSlash(c)), display: filepath.Join(t.display, filepath.FromSlash(c))}, nil
	}
	name := path.Join(t.name, c)
	return acquire(t.s, t.root, name)
}

// At is the Target of name, a root-relative name in t's root (one a walk
// of t found), in t's scope. It shares t's root: close it before t.
func (t *Target) At(name string) (*Target, error) {
	if t.s == nil {
		return nil, fault.New(fault.Internal, "scope: At on a host path")
	}
	c := path.Clean(name)
	switch {
	case c == ".." || strings.HasPrefix(c, "../") || path.IsAbs(c):
		return nil, fault.New(fault.Denied, "%s leads out of the root", name).By("roots")
	case atfile.HasStagingElement(c):
		return nil, atfile.Reserved(c)
	}
	return &Target{s: t.s, root: t.root, name: c, display: display(t.s.roots, t.root, c), r: t.r}, nil
}

// Root is the host path of t's root ("" for a host target).
func (t *Target) Root() string { return t.root }

// Name is t's root-relative, slash-separated, cleaned name ("." for the
// root itself), or a host target's path.
func (t *Target) Name() string { return t.name }

// Display is how results name t: root-relative under the scope's first
// root, absolute elsewhere.
func (t *Target) Display() string { return t.display }

// Child is how results name the entry name (root-relative) of t's root.
func (t *Target) Child(name string) string {
	if t.s == nil {
		return name
	}
	return display(t.s.roots, t.root, name)
}

// HostPath is t's path on the host, lexically (its root joined with its
// name): what a program that takes a path, not a descriptor, is given.
func (t *Target) HostPath() string {
	if t.s == nil {
		return t.name
	}
	return filepath.Join(t.root, filepath.FromSlash(t.name))
}

// Close closes what t opened and releases its root.
func (t *Target) Close() error {
	var err error
	if t.parent != nil {
		err = t.parent.Close()
		t.parent, t.wrapped = nil, nil
	}
	if t.release != nil {
		t.release()
		t.release = nil
	}
	return err
}

func display(roots []string, root, rel string) string {
	if len(roots) > 0 && root == roots[0] {
		return rel
	}
	if rel == "." {
		return root
	}
	return root + "/" + rel
}

// resolve maps p onto roots: the root it lies in and its name there.
func resolve(roots []string, p string) (root, rel string, err error) {
	if len(roots) == 0 {
		return "", "", fault.New(fault.Denied, "no root is granted for this operation").By("roots")
	}
	if err := checkPathText(p); err != nil {
		return "", "", err
	}
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		best := ""
		for _, r := range roots {
			if capability.Within(r, c) && len(r) > len(best) {
				best = r
			}
		}
		if best == "" {
			return "", "", fault.New(fault.Denied, "path is outside the allowed roots").By("roots")
		}
		rel, err := filepath.Rel(best, c)
		if err != nil {
			return "", "", fault.New(fault.Denied, "path is outside the allowed roots").By("roots")
		}
		return checkStaging(best, filepath.ToSlash(rel))
	}
	c := filepath.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", "", fault.New(fault.Denied, "path climbs out of the root").By("roots")
	}
	return checkStaging(roots[0], filepath.ToSlash(c))
}

// checkStaging refuses a root-relative name with an element in the staging
// namespace: no tool reads, lists or creates such a name.
func checkStaging(root, rel string) (string, string, error) {
	if atfile.HasStagingElement(rel) {
		return "", "", atfile.Reserved(rel)
	}
	return root, rel, nil
}

func checkPathText(p string) error {
	switch {
	case p == "":
		return fault.New(fault.InvalidInput, "path is empty")
	case len(p) > limits.PathMaxBytes:
		return fault.LimitExceeded("path bytes", limits.PathMaxBytes, int64(len(p)))
	case !utf8.ValidString(p):
		return fault.New(fault.InvalidInput, "path is not valid UTF-8")
	case p[0] == '~':
		return fault.New(fault.InvalidInput, "path starts with ~; home directories are not expanded: give a path inside the root")
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return fault.New(fault.InvalidInput, "path contains a control character at byte %d", i)
		}
	}
	switch last := p[len(p)-1]; last {
	case ' ', '"', '\'', '`':
		return fault.New(fault.InvalidInput, "path ends with %q; remove the stray character", last)
	}
	if strings.HasPrefix(p, " ") || strings.HasPrefix(p, "\"") || strings.HasPrefix(p, "'") {
		return fault.New(fault.InvalidInput, "path starts with a space or quote; remove the stray character")
	}
	return nil
}
