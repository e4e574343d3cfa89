package tools

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/atfile"
)

// executor runs the tools: scope, IO through the provider, windowing, and
// the policy events.
type executor struct {
	provider  files.Provider
	events    *files.Events
	protected capability.Protected
}

// target is a path resolved for one effect.
type target struct {
	root, name string
	// display is how results name it: root-relative under the effect's
	// first root (where relative paths start: the first writable root),
	// absolute elsewhere.
	display string
}

// resolve maps a caller's path onto a root the session's capabilities
// grant effect on. A path that lies under a root granted only other
// effects (a write under a read-only root) is denied with a message that
// says so.
func resolve(caps capability.Set, effect capability.Effect, p string) (target, error) {
	roots := caps.Roots(effect)
	root, rel, err := files.Resolve(roots, p)
	if err != nil {
		if fault.CodeOf(err) == fault.Denied && len(roots) > 0 {
			if _, _, other := files.Resolve(caps.AllRoots(), p); other == nil && filepath.IsAbs(p) {
				return target{}, fault.New(fault.Denied, "%s is not granted under that root (it may be read-only)", effect)
			}
		}
		return target{}, err
	}
	return target{root: root, name: rel, display: display(roots, root, rel)}, nil
}

// resolveChange is resolve for a path the tool creates, replaces or
// removes: a protected path of any of the effect's roots (or one under
// it), as spelled or as reached through a symlink, is denied before the
// file policy asks for a read. files/local checks again on the directory
// it changes.
func (x *executor) resolveChange(caps capability.Set, effect capability.Effect, p string) (target, error) {
	t, err := resolve(caps, effect, p)
	if err != nil {
		return target{}, err
	}
	return t, atfile.CheckBoth(caps.Roots(effect), t.root, t.name, x.protected.CheckWrite)
}

// resolveRename is resolve for either end of a move: a protected path,
// one under it or one holding it is denied.
func (x *executor) resolveRename(caps capability.Set, effect capability.Effect, p string) (target, error) {
	t, err := resolve(caps, effect, p)
	if err != nil {
		return target{}, err
	}
	return t, atfile.CheckBoth(caps.Roots(effect), t.root, t.name, x.protected.CheckRename)
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

// child is how results name an entry found under t (name is
// root-relative).
func (t target) child(roots []string, name string) string { return display(roots, t.root, name) }

// request is what a handler needs of its call: who asks (the file policy
// keys its observations by session), what they hold, and how many bytes
// the result may take. tools.go derives it from the kernel's call, so the
// handlers do not depend on the kernel.
type request struct {
	session   files.Session
	caps      capability.Set
	maxOutput int64
	tool      string // the tool's name, for how the host raises maxOutput
}

// tooLarge is the failure for one unit (a line, an entry) that does not
// fit the output bound alone.
func (r request) tooLarge(what, narrow string) error {
	if r.tool != "" {
		narrow += ", " + raiseOutputBound(r.tool)
	}
	return fault.OutputTooLarge(what, 0, r.maxOutput, narrow)
}

// where adds to a not_found failure for the relative path p the root it
// was looked for in and the other roots, so a model that meant a file in
// another root learns how to name it. Other failures pass unchanged.
func where(err error, caps capability.Set, p string, t target) error {
	fe := fault.As(err)
	if fe.Code != fault.NotFound || filepath.IsAbs(p) {
		return err
	}
	var others []string
	for _, r := range Roots(caps) {
		if r.Path != t.root {
			others = append(others, r.Path+" ("+r.Mode+")")
		}
	}
	msg := fmt.Sprintf("%s; relative paths start at the first writable root, %s", fe.Public(), t.root)
	if len(others) > 0 {
		msg += "; a file in another root is named by its absolute path (other roots: " + strings.Join(others, ", ") + ")"
	}
	return fault.Wrap(fault.NotFound, fe.Err, "%s", msg)
}
