package tools

import (
	"context"
	"fmt"
	iofs "io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

var globDescription = fmt.Sprintf(`Finds files by a glob pattern under path (default: the first root): * within a path element, ** across elements, ?, [a-z], [!a], {a,b}. Skips .git; never follows symbolic links. Newest first, or by path with sort="path" (pages that stay stable); up to %d (the default) from offset, and the result gives the next offset.`, limits.GlobMaxLimit)

// GlobArgs are glob's arguments.
type GlobArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"`
	Sort    string `json:"sort,omitempty"`
	Limit   int    `json:"limit,omitempty"`
	Offset  int    `json:"offset,omitempty"`
}

// GlobResult reports a glob; the paths are its text.
type GlobResult struct {
	// Total paths matched; Shown of them from Offset on; NextOffset is
	// where the next page starts (0: none).
	Total      int `json:"total"`
	Shown      int `json:"shown"`
	NotShown   int `json:"not_shown"`
	Offset     int `json:"offset"`
	NextOffset int `json:"next_offset,omitempty"`
	// Skipped counts directories not searched (deeper than
	// limits.WalkMaxDepth) and Stopped reports a walk that reached
	// limits.WalkMaxFiles entries.
	Skipped int  `json:"skipped_dirs"`
	Stopped bool `json:"stopped"`

	text string
}

func (r GlobResult) ToolText() string { return r.text }

// globMatch is one path found.
type globMatch struct {
	name    string
	modTime time.Time
}

func (x *executor) glob(ctx context.Context, req request, in GlobArgs) (*globPage, error) {
	if len(in.Pattern) > limits.GrepMaxPatternBytes {
		return nil, fault.LimitExceeded("pattern bytes", limits.GrepMaxPatternBytes, int64(len(in.Pattern)))
	}
	limit, err := bounded("limit", in.Limit, limits.GlobMaxResults, limits.GlobMaxLimit)
	if err != nil {
		return nil, err
	}
	offset, err := bounded("offset", in.Offset, 0, limits.GrepMaxOffset)
	if err != nil {
		return nil, err
	}
	if in.Sort != "" && in.Sort != "modified" && in.Sort != "path" {
		return nil, fault.New(fault.InvalidInput, "sort %q is not one of modified, path", in.Sort)
	}
	base, pattern := globBase(in.Pattern)
	re, err := compileGlob(pattern, doublestarSyntax)
	if in.Pattern == "" || strings.HasPrefix(in.Pattern, "/") || err != nil {
		return nil, fault.New(fault.InvalidInput, "pattern %q is not a valid relative glob (e.g. **/*.go); give the directory in path", in.Pattern)
	}
	dir := in.Path
	if dir == "" {
		dir = "."
	}
	if base != "." {
		dir = path.Join(dir, base)
	}
	t, err := x.resolve(req.caps, capability.List, dir)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	maxDepth := limits.WalkMaxDepth
	if !strings.Contains(pattern, "**") {
		maxDepth = min(maxDepth, strings.Count(pattern, "/")+1)
	}
	var res GlobResult
	var found []globMatch
	w := walker{base: t.name}
	err = x.provider.Walk(ctx, t.Target, func(info files.Info) error {
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
		if info.IsRegular() && rel != "" && re.MatchString(rel) {
			found = append(found, globMatch{name: info.Name, modTime: info.ModTime})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if in.Sort != "path" {
		sortNewestFirst(found)
	}
	res.Stopped = w.stopped
	return newGlobPage(res, found, offset, limit, t, req.caps.Roots(capability.List)), nil
}

// sortNewestFirst orders by modification time, newest first, then by
// name (the walk's order), so equal times page stably.
func sortNewestFirst(found []globMatch) {
	slices.SortStableFunc(found, func(a, b globMatch) int {
		return b.modTime.Compare(a.modTime)
	})
}

// globPage is the page [offset, offset+limit) of what a glob found, to
// be cut to the output bound with its summary (result).
type globPage struct {
	counts GlobResult // nothing shown
	paths  []string   // as shown
}

func newGlobPage(res GlobResult, found []globMatch, offset, limit int, t target, roots []string) *globPage {
	res.Total, res.Offset = len(found), offset
	p := &globPage{counts: res}
	for _, m := range found[min(offset, len(found)):min(offset+limit, len(found))] {
		p.paths = append(p.paths, t.child(m.name))
	}
	return p
}

// result is the page's first n paths and the summary.
func (p *globPage) result(n int) GlobResult {
	res := p.counts
	res.Shown, res.NotShown = n, res.Total-n
	offset := res.Offset
	if offset+n < res.Total {
		res.NextOffset = offset + n
	}
	var b strings.Builder
	for _, path := range p.paths[:n] {
		b.WriteString(path)
		b.WriteByte('\n')
	}
	b.WriteString("(")
	b.WriteString(strconv.Itoa(res.Total))
	b.WriteString(" paths match")
	if res.Shown > 0 && res.NotShown > 0 {
		fmt.Fprintf(&b, "; showing %d–%d", offset+1, offset+res.Shown)
	}
	if res.NotShown > 0 {
		fmt.Fprintf(&b, "; %d not shown", res.NotShown)
		if res.NextOffset > 0 {
			fmt.Fprintf(&b, ": the next page is offset=%d", res.NextOffset)
			if n < len(p.paths) {
				b.WriteString(" (the output bound was reached)")
			}
		}
	}
	if res.Skipped > 0 {
		fmt.Fprintf(&b, "; %d directories deeper than %d levels not searched", res.Skipped, limits.WalkMaxDepth)
	}
	if res.Stopped {
		fmt.Fprintf(&b, "; the search stopped after %d entries: search a subdirectory", limits.WalkMaxFiles)
	}
	b.WriteString(")\n")
	res.text = b.String()
	return res
}
