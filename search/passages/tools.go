package passages

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/toolkit"
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
	Offset     int      `json:"offset,omitempty" jsonschema:"matches to skip first: the previous answer's next_offset; default 0"`
}

// FindResult is passages_find's result: the matches from offset on that
// fit the output bound.
type FindResult struct {
	Result
	// Offset is the first match shown (0-based); NextOffset the offset
	// of the next window (0: no more matches can be returned).
	Offset     int `json:"offset,omitzero"`
	NextOffset int `json:"next_offset,omitzero"`
}

// ToolText is what the model reads: the matches, and where the next
// window starts.
func (r FindResult) ToolText() string {
	if r.Offset == 0 && r.NextOffset == 0 {
		return r.Result.ToolText()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d matches (%s); matches %d..%d shown", r.Total, r.Matching, r.Offset+1, r.Offset+len(r.Matches))
	if r.NextOffset > 0 {
		fmt.Fprintf(&b, ": the next window is passages_find with offset=%d", r.NextOffset)
	}
	b.WriteByte('\n')
	writeMatches(&b, r.Matches)
	return b.String()
}

// findWindow asks for the matches up to offset+limit (never past
// limits.PassagesMaxMatches) and returns those from offset on that fit
// the call's output bound.
func findWindow(ctx context.Context, call *kernel.Call, in FindArgs) (FindResult, error) {
	if in.Offset < 0 || in.Offset >= limits.PassagesMaxMatches {
		return FindResult{}, fault.New(fault.InvalidInput, "offset must be 0..%d: only the first %d matches are returned", limits.PassagesMaxMatches-1, limits.PassagesMaxMatches)
	}
	limit := cmp.Or(in.Limit, limits.PassagesDefaultMatches)
	if limit < 0 || limit > limits.PassagesMaxMatches {
		return FindResult{}, fault.LimitExceeded("limit", limits.PassagesMaxMatches, int64(limit))
	}
	t, err := scope.New(call.Session.Capabilities(), capability.Search, capability.Protected{}).Resolve(in.Path)
	if err != nil {
		return FindResult{}, err
	}
	defer t.Close()
	r, err := findTarget(ctx, t, in.Query, &Options{Regions: in.Regions, IgnoreCase: in.IgnoreCase, Limit: min(in.Offset+limit, limits.PassagesMaxMatches)})
	if err != nil {
		return FindResult{}, err
	}
	if in.Offset >= len(r.Matches) && in.Offset > 0 {
		return FindResult{}, fault.New(fault.InvalidInput, "offset %d is past the last match; there are %d", in.Offset, r.Total)
	}
	reachable := int(min(r.Total, limits.PassagesMaxMatches))
	return toolkit.Prefix(call, r.Matches, in.Offset, "match", func(shown []Match, next int) FindResult {
		w := FindResult{Result: *r, Offset: in.Offset}
		w.Matches = shown
		switch end := in.Offset + len(shown); {
		case next > 0:
			w.NextOffset = next
		case end < reachable:
			w.NextOffset = end // the limit stopped before the matches did
		}
		return w
	})
}

// ToolText is what the model reads.
func (r Result) ToolText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d matches (%s)", r.Total, r.Matching)
	if r.Truncated() {
		fmt.Fprintf(&b, "; the first %d shown", len(r.Matches))
	}
	b.WriteByte('\n')
	writeMatches(&b, r.Matches)
	return b.String()
}

// writeMatches writes one line per match.
func writeMatches(b *strings.Builder, ms []Match) {
	for _, m := range ms {
		fmt.Fprintf(b, "[%d, %d) region %d: %q\n", m.Start, m.End, m.Region, m.Before+"⟦"+m.Text+"⟧"+m.After)
	}
}

// RegisterTools registers passages_find (effect search, deferred). The
// path is resolved in the scope of the roots the session's capabilities
// grant search on (internal/scope), so no path leads out of a granted
// root. opts may be nil.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	var timeout time.Duration
	if opts != nil {
		timeout = opts.Timeout
	}
	return kernel.AddTool(b, kernel.Policy{Name: "passages_find", Timeout: timeout},
		kernel.Meta{
			Effect:  capability.Search,
			Title:   "Find literal passages",
			Summary: "Every exact occurrence of a literal in one text file, with character offsets and context, optionally per page",
			Description: fmt.Sprintf(`Finds every occurrence of query in one UTF-8 text file (at most %d bytes), exactly as written: no normalisation of spaces, punctuation or accents; ignore_case folds case (Unicode simple folding; the result says which matching ran). Matches are leftmost and non-overlapping; offsets are characters (Unicode code points) from the start of the file, [start, end).
With regions (non-overlapping character ranges such as pages), only matches lying inside one region count, and each match names its region (its index in the list) and shows context that never crosses the region's edge. At most %d matches are returned (default %d), from offset on (never past the first %d); "total" always counts them all. Matches past the output bound (%s unless the host sets another) come as a window with next_offset, the offset of the next call. Context: up to %d characters on each side, exactly as in the file.
Example: {"path": "docs/contract.txt", "query": "termination", "ignore_case": true, "regions": [{"start": 0, "end": 3120}, {"start": 3120, "end": 6388}]}`,
				limits.PassagesMaxSourceBytes, limits.PassagesMaxMatches, limits.PassagesDefaultMatches, limits.PassagesMaxMatches, limits.Bytes(limits.DefaultMaxOutputBytes), limits.PassagesContextRunes),
		},
		findWindow)
}
