package feed

import (
	"context"
	"fmt"
	"strings"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/toolkit"
	"github.com/capkit/capkit/limits"
)

// ToolOptions configure RegisterTools: a toolkit.FileReader for path arguments
// and the policy bounds. A nil *ToolOptions means the zero value.
type ToolOptions = toolkit.ReaderOptions

// ParseArgs are feed_parse's arguments.
type ParseArgs struct {
	Text   string `json:"text,omitempty" jsonschema:"the feed's XML itself; give text or path"`
	Path   string `json:"path,omitempty" jsonschema:"path of a feed file in a readable root; give text or path"`
	URL    string `json:"url,omitempty" jsonschema:"absolute http(s) URL the feed came from; relative links are resolved against it (default none: relative links are left out)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many entries to return, from 1 to the entries limit in the tool description (the default); the rest are checked and counted as omitted"`
	Offset int    `json:"offset,omitempty" jsonschema:"first line of the text to show, 0-based: the previous answer's next_offset; default 0"`
}

// ParseResult is feed_parse's result: the entries are in the text the
// model reads (ToolText); the structured content holds the feed's
// metadata, counts, duplicates and warnings.
type ParseResult struct {
	Format          Format      `json:"format"`
	Title           string      `json:"title"`
	Link            string      `json:"link,omitempty"`
	TotalEntries    int         `json:"total_entries"`
	ReturnedEntries int         `json:"returned_entries"`
	OmittedEntries  int         `json:"omitted_entries"`
	Duplicates      []Duplicate `json:"duplicates"`
	Warnings        []Warning   `json:"warnings"`
	// Span is the window of the text's lines shown.
	toolkit.Span
	text string
}

// ToolText is the rendered feed.
func (r ParseResult) ToolText() string { return r.text }

var _ kernel.Texter = ParseResult{}

var parseDescription = fmt.Sprintf(`Read an RSS (0.90, 0.91, 0.92, 2.0), RSS 1.0 (RDF) or Atom (1.0, 0.3) feed: title, then each entry's title, link (resolved against url, if given, and xml:base), dates (original text and UTC; a date that names no instant is reported, never replaced), authors and summary as text.
Returns at most limit entries (1 to %s, the default) in document order; the rest are still checked and reported as omitted. Entries sharing an id or link are reported as duplicates, and as conflicting when their content differs.
XML that is not well-formed (a bare &, an HTML entity without a DTD, a mismatched end tag) is repaired as a lenient reader would, and every repair is a warning with its line and column. DTDs and entity declarations are refused (only the RSS 0.91 DOCTYPE is accepted, never read). Limits: %s, %s nodes, depth %d, %s entries; text past the output bound (%s unless the host sets another) comes as a window of whole lines with next_offset, the offset of the next call.
Example: {"path": "feeds/news.xml", "url": "https://example.org/feed.xml", "limit": 20}`,
	limits.Count(limits.FeedMaxEntries), limits.Bytes(limits.FeedMaxBytes), limits.Count(limits.FeedMaxNodes), limits.FeedMaxDepth, limits.Count(limits.FeedMaxEntries), limits.Bytes(limits.DefaultMaxOutputBytes))

// RegisterTools registers feed_parse (effect parse, deferred).
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	o := opts.Value()
	return kernel.AddTool(b,
		o.Policy("feed_parse", limits.FeedToolMaxInputBytes),
		kernel.Meta{Effect: capability.Parse, Title: "Parse feed", Summary: "Read an RSS or Atom feed's entries, with dates, duplicates and omissions reported.", Description: parseDescription},
		func(ctx context.Context, call *kernel.Call, in ParseArgs) (ParseResult, error) {
			data, err := toolkit.Read(ctx, call, o.Files, in.Text, in.Path, limits.FeedMaxBytes, "feed")
			if err != nil {
				return ParseResult{}, err
			}
			limit := in.Limit
			if limit == 0 {
				limit = limits.FeedMaxEntries
			}
			f, err := Parse(ctx, data, in.URL, limit)
			if err != nil {
				return ParseResult{}, err
			}
			return f.result(call, in.Offset)
		})
}

// result renders the tool result, failing with limit as soon as the text
// passes max (the metadata's size is reserved first).
func (f *Feed) result(call *kernel.Call, offset int) (ParseResult, error) {
	r := ParseResult{Format: f.Format, Title: f.Title, Link: f.Link, TotalEntries: f.TotalEntries,
		ReturnedEntries: len(f.Entries), OmittedEntries: f.OmittedEntries, Duplicates: f.Duplicates, Warnings: f.Warnings}
	var text strings.Builder
	if err := f.WriteText(&text); err != nil {
		return ParseResult{}, fault.Wrap(fault.Internal, err, "rendering the feed's text failed")
	}
	span, win, err := toolkit.Lines(call, text.String(), offset, "the feed's text", func(s toolkit.Span, t string) any {
		r.Span, r.text = s, t
		return r
	})
	if err != nil {
		return ParseResult{}, err
	}
	r.Span, r.text = span, win
	return r, nil
}
