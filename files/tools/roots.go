package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/capkit/capkit/capability"
)

// The modes a root is granted in, as the model is told them.
const (
	ModeReadWrite = "read-write"
	ModeReadOnly  = "read-only"
)

// Root is one directory a session's file tools reach.
type Root struct {
	// Path is the root's absolute path: a path under it addresses a file
	// in it, whichever root relative paths start at.
	Path string `json:"path"`
	// Mode is ModeReadWrite when some effect that changes files is granted
	// on the root, else ModeReadOnly.
	Mode string `json:"mode"`
}

// Roots lists the roots caps reach, in the order paths resolve: the first
// is where relative paths start (the first writable root, or the first
// root when none is writable).
func Roots(caps capability.Set) []Root {
	writable := map[string]bool{}
	for _, c := range caps {
		for _, e := range c.Effects {
			if e.ReadOnly() {
				continue
			}
			for _, r := range c.Scope.Roots {
				writable[r] = true
			}
		}
	}
	var out []Root
	for _, r := range caps.AllRoots() {
		mode := ModeReadOnly
		if writable[r] {
			mode = ModeReadWrite
		}
		out = append(out, Root{Path: r, Mode: mode})
	}
	// A writable root the grant order lists after a read-only one still
	// comes first: relative paths start there.
	for i, r := range out {
		if r.Mode == ModeReadWrite {
			copy(out[1:i+1], out[:i])
			out[0] = r
			break
		}
	}
	return out
}

// RootsText tells a model which roots it has and how to address them; the
// server's instructions and list_roots say it.
func RootsText(roots []Root) string {
	if len(roots) == 0 {
		return "No file root is granted: the file tools have nothing to work on."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "File roots (relative paths start at the first, %s; address a file in any root by its absolute path):\n", roots[0].Path)
	for _, r := range roots {
		fmt.Fprintf(&b, "- %s (%s)\n", r.Path, modeText(r.Mode))
	}
	return b.String()
}

func modeText(mode string) string {
	if mode == ModeReadOnly {
		return "read-only: reading, listing and searching only"
	}
	return "read-write"
}

// RootsResult is what list_roots returns.
type RootsResult struct {
	Roots []Root `json:"roots"`
	// RelativeBase is where relative paths start: the first root's path,
	// or empty when there is none.
	RelativeBase string `json:"relative_base"`
}

func (r RootsResult) ToolText() string { return RootsText(r.Roots) }

type rootsArgs struct{}

const rootsDescription = `Lists the directories the file tools can reach, with their absolute paths and modes (read-write or read-only). Relative paths start at the first; reach a file in another by its absolute path.`

func (x *executor) listRoots(_ context.Context, req request, _ rootsArgs) (RootsResult, error) {
	res := RootsResult{Roots: Roots(req.caps)}
	if res.Roots == nil {
		res.Roots = []Root{}
	}
	if len(res.Roots) > 0 {
		res.RelativeBase = res.Roots[0].Path
	}
	return res, nil
}
