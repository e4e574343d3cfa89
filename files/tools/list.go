package tools

import (
	"context"
	"fmt"
	iofs "io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

var listDescription = fmt.Sprintf(`Lists a directory: one entry a line, in name order, directories with a trailing /, symbolic links marked @, other special files marked (special file). offset skips that many entries and limit shows at most that many (default and at most %d); the order is stable, so offset pages through a directory: the result says how many entries there are and the offset to continue with. details: true adds each entry's type, size, permissions and modification time. A listing that would exceed the tool's output bound (%d bytes by default) ends on the last whole entry that fits and says so. Without a path, lists the first writable root (where relative paths start; list_roots lists every root and its mode); a path in any root may be given absolute.
Example: {"path": "src", "offset": 1000, "details": true}`, limits.ListMaxEntries, limits.ToolTextBytes)

const globDescription = `Finds files whose path matches a glob pattern, relative to path (default: the first writable root, where relative paths start; a directory in any root may be given absolute): * matches within one path element, ** any number of elements, ? one character, [abc] and {a,b} as usual. Directories named .git are skipped; symbolic links are not followed. At most 1000 paths are shown, in lexical order; the result says how many more matched.
Example: {"pattern": "**/*_test.go", "path": "src"}`

// GlobArgs are glob's arguments.
type GlobArgs struct {
	Pattern string `json:"pattern" jsonschema:"the glob, e.g. **/*.go"`
	Path    string `json:"path,omitempty" jsonschema:"the directory to search: relative to the first writable root (the default), or absolute inside any root (list_roots lists them)"`
}

// GlobResult reports a glob; the paths are its text.
type GlobResult struct {
	Shown    int `json:"shown"`
	NotShown int `json:"not_shown"`
	// Skipped counts directories not searched (deeper than
	// limits.WalkMaxDepth) and Stopped reports a walk that reached
	// limits.WalkMaxFiles entries.
	Skipped int  `json:"skipped_dirs"`
	Stopped bool `json:"stopped"`

	text string
}

func (r GlobResult) ToolText() string { return r.text }

func (x *executor) glob(ctx context.Context, req request, in GlobArgs) (GlobResult, error) {
	if len(in.Pattern) > limits.GrepMaxPatternBytes {
		return GlobResult{}, fault.LimitExceeded("pattern bytes", limits.GrepMaxPatternBytes, int64(len(in.Pattern)))
	}
	if in.Pattern == "" || strings.HasPrefix(in.Pattern, "/") || !doublestar.ValidatePattern(in.Pattern) {
		return GlobResult{}, fault.New(fault.InvalidInput, "pattern %q is not a valid relative glob (e.g. **/*.go); give the directory in path", in.Pattern)
	}
	base, pattern := doublestar.SplitPattern(in.Pattern)
	dir := in.Path
	if dir == "" {
		dir = "."
	}
	if base != "." {
		dir = path.Join(dir, base)
	}
	caps := req.caps
	t, err := resolve(caps, capability.List, dir)
	if err != nil {
		return GlobResult{}, err
	}
	roots := caps.Roots(capability.List)
	maxDepth := limits.WalkMaxDepth
	if !strings.Contains(pattern, "**") {
		maxDepth = min(maxDepth, strings.Count(pattern, "/")+1)
	}
	var res GlobResult
	var b strings.Builder
	w := walker{base: t.name}
	err = x.provider.Walk(ctx, t.root, t.name, func(info files.Info) error {
		rel, depth, skip := w.visit(info)
		if skip != nil {
			return skip
		}
		if info.IsDir() {
			if depth >= maxDepth {
				if depth >= limits.WalkMaxDepth {
					res.Skipped++
				}
				return iofs.SkipDir
			}
			return nil
		}
		if !info.IsRegular() || rel == "" {
			return nil
		}
		if ok, _ := doublestar.Match(pattern, rel); !ok {
			return nil
		}
		if res.Shown == limits.GlobMaxResults {
			res.NotShown++
			return nil
		}
		res.Shown++
		b.WriteString(t.child(roots, info.Name))
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		return GlobResult{}, err
	}
	res.Stopped = w.stopped
	res.text = b.String() + summary(res.Shown, res.NotShown, "paths match", res.Skipped, res.Stopped)
	return res, nil
}

// walker applies the walk rules shared by glob and grep: .git is skipped,
// depth and file count are bounded.
type walker struct {
	base    string
	files   int
	stopped bool
}

// visit returns info's path relative to the walk base, its depth (0 for
// the base itself), and SkipDir/SkipAll when the walk must not go on
// there.
func (w *walker) visit(info files.Info) (rel string, depth int, skip error) {
	switch {
	case info.Name == w.base:
		rel = ""
	case w.base == ".":
		rel = info.Name
	default:
		rel = strings.TrimPrefix(info.Name, w.base+"/")
	}
	if rel != "" {
		depth = strings.Count(rel, "/") + 1
	}
	if w.files++; w.files > limits.WalkMaxFiles {
		w.stopped = true
		return rel, depth, iofs.SkipAll
	}
	if info.IsDir() && path.Base(info.Name) == ".git" {
		return rel, depth, iofs.SkipDir
	}
	return rel, depth, nil
}

func summary(shown, notShown int, what string, skipped int, stopped bool) string {
	var b strings.Builder
	b.WriteString("(")
	b.WriteString(strconv.Itoa(shown + notShown))
	b.WriteString(" ")
	b.WriteString(what)
	if notShown > 0 {
		b.WriteString("; ")
		b.WriteString(strconv.Itoa(notShown))
		b.WriteString(" not shown: narrow the search")
	}
	if skipped > 0 {
		b.WriteString("; ")
		b.WriteString(strconv.Itoa(skipped))
		b.WriteString(" directories deeper than ")
		b.WriteString(strconv.Itoa(limits.WalkMaxDepth))
		b.WriteString(" levels not searched")
	}
	if stopped {
		b.WriteString("; the search stopped after ")
		b.WriteString(strconv.Itoa(limits.WalkMaxFiles))
		b.WriteString(" entries: search a subdirectory")
	}
	b.WriteString(")\n")
	return b.String()
}
