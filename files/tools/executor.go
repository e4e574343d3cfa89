package tools

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/scope"
)

// executor runs the tools: scope, IO through the provider, windowing, and
// the policy events.
type executor struct {
	provider  files.Provider
	events    *files.Events
	protected capability.Protected
}

// target is a path resolved in the scope of one effect's roots. Close
// it when the call is done.
type target struct {
	*scope.Target
	root, name string
	// display is how results name it: root-relative under the effect's
	// first root (where relative paths start: the first writable root),
	// absolute elsewhere.
	display string
}

// resolve maps a caller's path onto a root the session's capabilities
// grant effect on (scope.Scope.Resolve: a path that lies under a root
// granted only other effects, a write under a read-only root, is denied
// with a message that says so).
func (x *executor) resolve(caps capability.Set, effect capability.Effect, p string) (target, error) {
	t, err := scope.New(caps, effect, x.protected).Resolve(p)
	if err != nil {
		return target{}, err
	}
	return target{Target: t, root: t.Root(), name: t.Name(), display: t.Display()}, nil
}

// resolveChange is resolve for a path the tool creates, replaces or
// removes: a protected path of any of the effect's roots (or one under
// it), as spelled or as reached through a symlink, is denied before the
// file policy asks for a read (scope.Target.CheckWrite; the change itself
// is made through the directory this checked).
func (x *executor) resolveChange(caps capability.Set, effect capability.Effect, p string) (target, error) {
	t, err := x.resolve(caps, effect, p)
	if err != nil {
		return target{}, err
	}
	if err := t.CheckWrite(); err != nil {
		t.Close()
		return target{}, err
	}
	return t, nil
}

// resolveRename is resolve for either end of a move: a protected path,
// one under it or one holding it is denied.
func (x *executor) resolveRename(caps capability.Set, effect capability.Effect, p string) (target, error) {
	t, err := x.resolve(caps, effect, p)
	if err != nil {
		return target{}, err
	}
	if err := t.CheckRename(); err != nil {
		t.Close()
		return target{}, err
	}
	return t, nil
}

// child is how results name an entry found under t (name is
// root-relative).
func (t target) child(name string) string { return t.Child(name) }

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

// statAt, openAt and readAllAt are the provider's Stat, Open and ReadAll
// of name, an entry a walk or listing of t's root found.
func (x *executor) statAt(ctx context.Context, t target, name string) (files.Info, error) {
	c, err := t.At(name)
	if err != nil {
		return files.Info{}, err
	}
	defer c.Close()
	return x.provider.Stat(ctx, c)
}

func (x *executor) openAt(ctx context.Context, t target, name string) (files.File, error) {
	c, err := t.At(name)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return x.provider.Open(ctx, c)
}

func (x *executor) readAllAt(ctx context.Context, t target, name string, maxBytes int64) ([]byte, files.Version, error) {
	c, err := t.At(name)
	if err != nil {
		return nil, files.Version{}, err
	}
	defer c.Close()
	return x.provider.ReadAll(ctx, c, maxBytes)
}
