package tools

import (
	"context"
	"fmt"
	iofs "io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

var treeDescription = fmt.Sprintf(`Shows a directory as an indented tree, in name order, directories with a trailing /, symbolic links marked @ (not followed). It is an overview: it goes max_depth levels deep (default %d, at most %d) and shows at most max_entries entries (default %d, at most %d), and says where it stopped (directories not expanded, entries not shown); .git directories are shown but not expanded. The tree also ends on a whole line within the tool's output bound (%d bytes by default). Without a path, shows the first writable root (where relative paths start; list_roots lists every root).
Example: {"path": "src", "max_depth": 2}`, limits.DirTreeDefaultDepth, limits.DirTreeMaxDepth, limits.DirTreeDefaultEntries, limits.DirTreeMaxEntries, limits.ToolTextBytes)

// TreeArgs are dir_tree's arguments.
type TreeArgs struct {
	Path       string `json:"path,omitempty" jsonschema:"the directory: relative to the first writable root (the default), or absolute inside any root (list_roots lists them)"`
	MaxDepth   int    `json:"max_depth,omitempty" jsonschema:"levels to expand (default and maximum in the description)"`
	MaxEntries int    `json:"max_entries,omitempty" jsonschema:"most entries to show (default and maximum in the description)"`
}

// TreeResult reports dir_tree; the tree is its text.
type TreeResult struct {
	Path  string `json:"path"`
	Shown int    `json:"shown"`
	// Unexpanded counts directories at max_depth whose content is not
	// shown; Cut reports that the tree stopped at max_entries or the
	// output bound.
	Unexpanded int  `json:"unexpanded_dirs"`
	Cut        bool `json:"cut"`

	text string
}

func (r TreeResult) ToolText() string { return r.text }

func (in TreeArgs) caps() (depth, entries int, err error) {
	depth, entries = in.MaxDepth, in.MaxEntries
	switch {
	case depth < 0 || entries < 0:
		return 0, 0, fault.New(fault.InvalidInput, "max_depth and max_entries must not be negative")
	case depth > limits.DirTreeMaxDepth:
		return 0, 0, fault.LimitExceeded("max_depth", limits.DirTreeMaxDepth, int64(depth))
	case entries > limits.DirTreeMaxEntries:
		return 0, 0, fault.LimitExceeded("max_entries", limits.DirTreeMaxEntries, int64(entries))
	}
	if depth == 0 {
		depth = limits.DirTreeDefaultDepth
	}
	if entries == 0 {
		entries = limits.DirTreeDefaultEntries
	}
	return depth, entries, nil
}

func (x *executor) dirTree(ctx context.Context, req request, in TreeArgs) (TreeResult, error) {
	maxDepth, maxEntries, err := in.caps()
	if err != nil {
		return TreeResult{}, err
	}
	p := in.Path
	if p == "" {
		p = "."
	}
	t, err := x.resolve(req.caps, capability.List, p)
	if err != nil {
		return TreeResult{}, err
	}
	defer t.Close()
	budget := int(textBudget(req.maxOutput))
	res := TreeResult{Path: t.display}
	var b strings.Builder
	b.WriteString(t.display)
	b.WriteString("/\n")
	w := walker{base: t.name}
	err = x.provider.Walk(ctx, t.Target, func(info files.Info) error {
		rel, depth, skip := w.visit(info)
		if rel == "" {
			if !info.IsDir() {
				return fault.New(fault.InvalidInput, "%s is not a directory; use file_info", t.display)
			}
			return nil
		}
		if res.Shown == maxEntries {
			res.Cut = true
			return iofs.SkipAll
		}
		line := treeLine(info, depth)
		if b.Len()+len(line) > budget {
			res.Cut = true
			return iofs.SkipAll
		}
		b.WriteString(line)
		res.Shown++
		if skip != nil {
			return skip // .git, or the walk bound
		}
		if info.IsDir() && depth >= maxDepth {
			res.Unexpanded++
			return iofs.SkipDir
		}
		return nil
	})
	if err != nil {
		return TreeResult{}, err
	}
	res.Cut = res.Cut || w.stopped
	b.WriteString(treeFooter(res, maxDepth, maxEntries))
	res.text = b.String()
	return res, nil
}

func treeLine(info files.Info, depth int) string {
	var b strings.Builder
	b.WriteString(strings.Repeat("  ", depth))
	b.WriteString(path.Base(info.Name))
	switch {
	case info.IsDir():
		b.WriteString("/")
	case info.Mode&iofs.ModeSymlink != 0:
		b.WriteString("@")
	case !info.IsRegular():
		b.WriteString("  (special file)")
	}
	b.WriteByte('\n')
	return b.String()
}

func treeFooter(r TreeResult, depth, entries int) string {
	var b strings.Builder
	b.WriteString("(")
	b.WriteString(strconv.Itoa(r.Shown))
	b.WriteString(" entries shown")
	if r.Unexpanded > 0 {
		b.WriteString("; ")
		b.WriteString(strconv.Itoa(r.Unexpanded))
		b.WriteString(" directories at depth ")
		b.WriteString(strconv.Itoa(depth))
		b.WriteString(" not expanded")
	}
	if r.Cut {
		b.WriteString("; the tree stopped at ")
		b.WriteString(strconv.Itoa(r.Shown))
		b.WriteString(" entries (max_entries ")
		b.WriteString(strconv.Itoa(entries))
		b.WriteString(" or the output bound): show a subdirectory for the rest")
	}
	b.WriteString(")\n")
	return b.String()
}
