package htmldoc

import (
	"cmp"
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

// ExtractArgs are html_extract's arguments.
type ExtractArgs struct {
	Text    string `json:"text,omitempty" jsonschema:"the HTML page itself; give text or path"`
	Path    string `json:"path,omitempty" jsonschema:"path of an HTML file in a readable root; give text or path"`
	Select  string `json:"select,omitempty" jsonschema:"what to return: text (every visible block of the page; the default) or article (the main article, checked to be prose)"`
	BaseURL string `json:"base_url,omitempty" jsonschema:"absolute http(s) URL the page came from; links are resolved against it"`
	Offset  int    `json:"offset,omitempty" jsonschema:"first line of the text to show, 0-based: the previous answer's next_offset; default 0"`
	// AllowAccessScreen is the caller's override of the access-screen
	// refusal, for a page it knows is no screen; the result then says in a
	// warning what the check found.
	AllowAccessScreen bool `json:"allow_access_screen,omitempty" jsonschema:"return a page the check takes for an access screen, with an access_screen warning, instead of failing"`
}

// ExtractResult is html_extract's result: the page's text is what the
// model reads (ToolText); the structured content holds only metadata, so
// no content appears twice.
type ExtractResult struct {
	Title    string       `json:"title"`
	Select   Selection    `json:"select"`
	Article  *ArticleInfo `json:"article,omitempty"`
	Blocks   int          `json:"blocks"`
	Links    int          `json:"links"`
	Warnings []Warning    `json:"warnings"`
	// Span is the window of the text's lines shown.
	toolkit.Span
	text string
}

// ToolText is the rendered page.
func (r ExtractResult) ToolText() string { return r.text }

var _ kernel.Texter = ExtractResult{}

var extractDescription = fmt.Sprintf(`Read an HTML page as text: title, headings, paragraphs, list items, quotes, preformatted blocks and table rows, then its links.
select "text" (the default) returns every visible block; "article" returns only the main article, identified (element, size, link density) and checked to be prose, and fails on index pages and pages without one.
Login walls, cookie/consent walls, bot challenges, paywalls and error pages fail (integrity) instead of being returned as content; allow_access_screen returns such a page anyway, with an access_screen warning. Warnings say when tables were flattened, hidden text was left out or the content needs scripts to render (the HTML does not hold it).
Limits: %s of HTML, %s nodes, nesting depth %s, %s attributes per element; text past the output bound (%s unless the host sets another) comes as a window of whole lines with next_offset, the offset of the next call.
Example: {"path": "pages/post.html", "select": "article", "base_url": "https://example.org/blog/post"}`,
	limits.Bytes(limits.HTMLMaxBytes), limits.Count(limits.HTMLMaxNodes), limits.Count(limits.HTMLMaxDepth), limits.Count(limits.HTMLMaxAttributes), limits.Bytes(limits.DefaultMaxOutputBytes))

// RegisterTools registers html_extract (effect parse, deferred).
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	o := opts.Value()
	return kernel.AddTool(b,
		o.Policy("html_extract", limits.HTMLToolMaxInputBytes),
		kernel.Meta{Effect: capability.Parse, Title: "Extract HTML text", Summary: "Read an HTML page's text or main article, rejecting access screens.", Description: extractDescription},
		func(ctx context.Context, call *kernel.Call, in ExtractArgs) (ExtractResult, error) {
			sel, err := ParseSelection(cmp.Or(in.Select, string(SelectText)))
			if err != nil {
				return ExtractResult{}, err
			}
			data, err := toolkit.Read(ctx, call, o.Files, in.Text, in.Path, limits.HTMLMaxBytes, "HTML")
			if err != nil {
				return ExtractResult{}, err
			}
			doc, err := Parse(ctx, data, sel, &Options{BaseURL: in.BaseURL, DisableAccessScreenRefusal: in.AllowAccessScreen})
			if err != nil {
				return ExtractResult{}, err
			}
			return doc.result(call, in.Offset)
		})
}

// result renders the tool result, failing with limit as soon as the text
// passes max (the metadata's size is reserved first).
func (d *Document) result(call *kernel.Call, offset int) (ExtractResult, error) {
	r := ExtractResult{Title: d.Title, Select: d.Selection, Article: d.Article, Blocks: len(d.Blocks), Links: len(d.Links), Warnings: d.Warnings}
	var text strings.Builder
	if err := d.WriteText(&text); err != nil {
		return ExtractResult{}, fault.Wrap(fault.Internal, err, "rendering the page's text failed")
	}
	span, win, err := toolkit.Lines(call, text.String(), offset, "the page's text", func(s toolkit.Span, t string) any {
		r.Span, r.text = s, t
		return r
	})
	if err != nil {
		return ExtractResult{}, err
	}
	r.Span, r.text = span, win
	return r, nil
}
