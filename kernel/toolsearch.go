package kernel

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/limits"
)

type toolSearchArgs struct {
	Query string `json:"query"`
	Limit int    `json:"limit,omitempty"`
}

// ToolMatch is one tool found by tool_search.
type ToolMatch struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Summary string `json:"summary"`
	// Origin names who defines the tool besides capkit ("upstream
	// memory"): its summary is that origin's text, not capkit's.
	Origin string `json:"origin,omitempty"`
	// New reports that this search added the tool to the session's tool
	// list; otherwise it was listed already.
	New bool `json:"new"`
}

// ToolSearchResult lists the tools tool_search found and activated.
type ToolSearchResult struct {
	Tools []ToolMatch `json:"tools"`
	// Activated are the tools newly added to this session's tool list.
	Activated []string `json:"activated"`
	// Limit is the limit applied; LimitNote says why it differs from the
	// one asked for, when it does.
	Limit     int    `json:"limit"`
	LimitNote string `json:"limit_note,omitempty"`
}

func (r ToolSearchResult) ToolText() string {
	var b strings.Builder
	if r.LimitNote != "" {
		b.WriteString(r.LimitNote)
		b.WriteByte('\n')
	}
	if len(r.Tools) == 0 {
		b.WriteString("no tools match; try other words")
		return b.String()
	}
	for _, fresh := range []bool{true, false} {
		head := "tools now available:\n"
		if !fresh {
			head = "already in your tool list:\n"
		}
		for _, t := range r.Tools {
			if t.New != fresh {
				continue
			}
			b.WriteString(head)
			head = ""
			b.WriteString(t.Name)
			if t.Origin != "" {
				b.WriteString(" (from " + t.Origin + ")")
			}
			b.WriteString(": ")
			b.WriteString(t.Summary)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func registerToolSearch(b *Builder) error {
	return AddTool(b, Policy{Name: catalog.ToolSearchName, MaxInputBytes: limits.ToolSearchMaxQuery + 64},
		Meta{
			Effect:  capability.ToolSearch,
			Hot:     true,
			Title:   "Find more tools",
			Summary: "Find and enable more tools by keyword.",
			Description: fmt.Sprintf("Finds more tools this session may use, by words in their names, titles and summaries, "+
				"and adds them to the tool list; the result says which are new. At most %d (default %d).",
				limits.SearchMaxResults, limits.SearchDefaultResults),
		},
		func(ctx context.Context, call *Call, in toolSearchArgs) (ToolSearchResult, error) {
			s := call.Session
			res := ToolSearchResult{Activated: []string{}}
			res.Limit, res.LimitNote = searchLimit(in.Limit)
			found, err := s.search(ctx, in.Query, res.Limit)
			if err != nil {
				return res, err
			}
			names := make([]string, 0, len(found))
			for _, e := range found {
				names = append(names, e.Name)
			}
			res.Activated = append(res.Activated, s.Activate(names...)...)
			res.Tools = make([]ToolMatch, 0, len(found))
			for _, e := range found {
				summary := e.Summary
				if summary == "" {
					summary = e.Description
				}
				res.Tools = append(res.Tools, ToolMatch{Name: e.Name, Title: e.Hints().Title, Summary: summary,
					Origin: e.Origin, New: slices.Contains(res.Activated, e.Name)})
			}
			return res, nil
		})
}

// search ranks the tools s is granted and offered for query: with the
// runtime's ToolIndex when the catalog is large, else the catalog's own
// word matching. Offered may wait for ctx (a source still starting).
func (s *Session) search(ctx context.Context, query string, limit int) ([]*catalog.Entry, error) {
	keep := func(e *catalog.Entry) bool {
		return e.Name != catalog.ToolSearchName && s.caps.Grants(e.Effect) && s.rt.offeredTo(ctx, s, e)
	}
	if s.rt.index == nil || s.rt.catalog.Len() <= limits.ToolSearchIndexMinEntries {
		return s.rt.catalog.Search(s.caps, query, limit, keep), nil
	}
	ix, err := s.rt.index()
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "the tool index cannot be made")
	}
	return ix.Rank(ctx, query, limit, keep)
}

// searchLimit is the limit tool_search applies for the one asked for, and
// a note when they differ.
func searchLimit(asked int) (int, string) {
	switch {
	case asked == 0:
		return limits.SearchDefaultResults, ""
	case asked < limits.SearchMinResults || asked > limits.SearchMaxResults:
		used := min(max(asked, limits.SearchMinResults), limits.SearchMaxResults)
		return used, fmt.Sprintf("limit %d is outside %d..%d; %d was used", asked, limits.SearchMinResults, limits.SearchMaxResults, used)
	}
	return asked, ""
}

// compile-time check that the search result renders its own text.
var _ Texter = ToolSearchResult{}
