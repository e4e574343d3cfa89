package passages

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// ToolOptions configure the model-facing tool. A nil *ToolOptions is
// valid.
type ToolOptions struct {
	// Timeout bounds one call; zero means the kernel's default.
	Timeout time.Duration
}

// FindArgs are passages_find's arguments.
type FindArgs struct {
	Path       string   `json:"path" jsonschema:"source text file, inside a root granted search"`
	Query      string   `json:"query" jsonschema:"the literal text to find"`
	Regions    []Region `json:"regions,omitempty" jsonschema:"non-overlapping character ranges [start, end) to search, such as pages; matches name their region by its index here"`
	IgnoreCase bool     `json:"ignore_case,omitempty" jsonschema:"match with Unicode simple case folding"`
	Limit      int      `json:"limit,omitempty"`
}

// ToolText is what the model reads.
func (r Result) ToolText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d matches (%s)", r.Total, r.Matching)
	if r.Truncated() {
		fmt.Fprintf(&b, "; the first %d shown", len(r.Matches))
	}
	b.WriteByte('\n')
	for _, m := range r.Matches {
		fmt.Fprintf(&b, "[%d, %d) region %d: %q\n", m.Start, m.End, m.Region, m.Before+"⟦"+m.Text+"⟧"+m.After)
	}
	return b.String()
}

// RegisterTools registers passages_find (effect search, deferred). The
// path is resolved with fs.Resolve against the roots the session's
// capabilities grant search on and opened through an os.Root, so no path
// leads out of a granted root. opts may be nil.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	var timeout time.Duration
	if opts != nil {
		timeout = opts.Timeout
	}
	return kernel.AddTool(b, kernel.Policy{Name: "passages_find", MaxOutputBytes: limits.PassagesToolOutputBytes, Timeout: timeout},
		kernel.Meta{
			Effect:  capability.Search,
			Title:   "Find literal passages",
			Summary: "Every exact occurrence of a literal in one text file, with character offsets and context, optionally per page",
			Description: fmt.Sprintf(`Finds every occurrence of query in one UTF-8 text file (at most %d bytes), exactly as written: no normalisation of spaces, punctuation or accents; ignore_case folds case (Unicode simple folding; the result says which matching ran). Matches are leftmost and non-overlapping; offsets are characters (Unicode code points) from the start of the file, [start, end).
With regions (non-overlapping character ranges such as pages), only matches lying inside one region count, and each match names its region (its index in the list) and shows context that never crosses the region's edge. At most %d matches are returned (default %d); "total" always counts them all. Context: up to %d characters on each side, exactly as in the file.
Example: {"path": "docs/contract.txt", "query": "termination", "ignore_case": true, "regions": [{"start": 0, "end": 3120}, {"start": 3120, "end": 6388}]}`,
				limits.PassagesMaxSourceBytes, limits.PassagesMaxMatches, limits.PassagesDefaultMatches, limits.PassagesContextRunes),
		},
		func(ctx context.Context, call *kernel.Call, in FindArgs) (Result, error) {
			d, name, _, err := atfile.ResolveParent(call.Session.Capabilities().Roots(capability.Search), in.Path)
			if err != nil {
				return Result{}, err
			}
			defer d.Close()
			r, err := FindIn(ctx, d, name, in.Query, &Options{Regions: in.Regions, IgnoreCase: in.IgnoreCase, Limit: in.Limit})
			if err != nil {
				return Result{}, err
			}
			return *r, nil
		})
}
