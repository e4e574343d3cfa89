package tools

import (
	"context"
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

const listDescription = `Lists a directory: one entry a line, directories with a trailing /, symbolic links marked @, other special files marked (special file). At most 1000 entries are shown, in name order; the result says how many more there are. Without a path, lists the first root. File sizes are not shown (read_file reports a file's size).
Example: {"path": "src"}`

const globDescription = `Finds files whose path matches a glob pattern, relative to path (default: the first root): * matches within one path element, ** any number of elements, ? one character, [abc] and {a,b} as usual. Directories named .git are skipped; symbolic links are not followed. At most 1000 paths are shown, in lexical order; the result says how many more matched.
Example: {"pattern": "**/*_test.go", "path": "src"}`

// ListArgs are list_dir's arguments.
type ListArgs struct {
	Path string `json:"path,omitempty" jsonschema:"the directory (default: the first root)"`
}

// ListResult reports a listing; the entries are its text.
type ListResult struct {
	Path     string `json:"path"`
	Shown    int    `json:"shown"`
	Total    int    `json:"total"`
	NotShown int    `json:"not_shown"`

	text string
}

func (r ListResult) ToolText() string { return r.text }

func (x *executor) listDir(ctx context.Context, req request, in ListArgs) (ListResult, error) {
	p := in.Path
	if p == "" {
		p = "."
	}
	t, err := resolve(req.caps, capability.List, p)
	if err != nil {
		return ListResult{}, err
	}
	entries, total, err := x.provider.ReadDir(ctx, t.root, t.name, limits.ListMaxEntries)
	if err != nil {
		return ListResult{}, err
	}
	// Names and types come from the directory itself: a stat per entry
	// (for sizes) was most of the cost of listing a large directory.
	var b strings.Builder
	b.Grow(len(entries)*16 + 64)
	for _, e := range entries {
		b.WriteString(path.Base(e.Name))
		switch {
		case e.IsDir():
			b.WriteString("/")
		case e.Type&iofs.ModeSymlink != 0:
			b.WriteString("@")
		case !e.IsRegular():
			b.WriteString("  (special file)")
		}
		b.WriteByte('\n')
	}
	res := ListResult{Path: t.display, Shown: len(entries), Total: total, NotShown: total - len(entries)}
	b.WriteString("(")
	b.WriteString(strconv.Itoa(total))
	b.WriteString(" entries in ")
	b.WriteString(t.display)
	if res.NotShown > 0 {
		b.WriteString("; ")
		b.WriteString(strconv.Itoa(res.NotShown))
		b.WriteString(" not shown: list a subdirectory or use glob")
	}
	b.WriteString(")\n")
	res.text = b.String()
	return res, nil
}

// GlobArgs are glob's arguments.
type GlobArgs struct {
	Pattern string `json:"pattern" jsonschema:"the glob, e.g. **/*.go"`
	Path    string `json:"path,omitempty" jsonschema:"the directory to search (default: the first root)"`
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
