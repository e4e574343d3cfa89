package kernel

import (
	"context"
	"strings"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/limits"
)

type toolSearchArgs struct {
	Query string `json:"query" jsonschema:"words to look for in tool names and summaries, e.g. \"move rename file\""`
	Limit int    `json:"limit,omitempty" jsonschema:"most tools to return, 1 to 12 (default 5)"`
}

// ToolMatch is one tool found by tool_search.
type ToolMatch struct {
	Name    string `json:"name"`
	Summary string `json:"summary"`
}

// ToolSearchResult lists the tools tool_search found and activated.
type ToolSearchResult struct {
	Tools []ToolMatch `json:"tools"`
	// Activated are the tools newly added to this session's tool list.
	Activated []string `json:"activated"`
}

func (r ToolSearchResult) ToolText() string {
	if len(r.Tools) == 0 {
		return "no tools match; try other words"
	}
	var b strings.Builder
	b.WriteString("tools now available:\n")
	for _, t := range r.Tools {
		b.WriteString(t.Name)
		b.WriteString(": ")
		b.WriteString(t.Summary)
		b.WriteByte('\n')
	}
	return b.String()
}

func registerToolSearch(b *Builder) error {
	return AddTool(b, Policy{Name: catalog.ToolSearchName, MaxInputBytes: limits.ToolSearchMaxQuery + 64},
		Meta{
			Effect:  capability.ToolSearch,
			Hot:     true,
			Summary: "Find and enable more tools by keyword.",
			Description: "Searches the tools this session may use but does not list yet, by words in their names and summaries, " +
				"and adds the matches to the tool list. Returns at most 12 tools (default 5). " +
				`Example: {"query": "move rename file", "limit": 3}`,
		},
		func(ctx context.Context, call *Call, in toolSearchArgs) (ToolSearchResult, error) {
			s := call.Session
			limit := in.Limit
			if limit == 0 {
				limit = limits.SearchDefaultResults
			}
			found := s.rt.catalog.Search(s.caps, in.Query, limit)
			res := ToolSearchResult{Tools: make([]ToolMatch, 0, len(found)), Activated: []string{}}
			names := make([]string, 0, len(found))
			for _, e := range found {
				summary := e.Summary
				if summary == "" {
					summary = e.Description
				}
				res.Tools = append(res.Tools, ToolMatch{Name: e.Name, Summary: summary})
				names = append(names, e.Name)
			}
			res.Activated = append(res.Activated, s.Activate(names...)...)
			return res, nil
		})
}

// compile-time check that the search result renders its own text.
var _ Texter = ToolSearchResult{}
