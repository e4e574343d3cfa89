package sniff

import (
	"fmt"

	"context"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/toolkit"
	"github.com/capkit/capkit/limits"
)

// ToolOptions configure RegisterTools: a toolkit.FileReader for path arguments
// and the policy bounds. A nil *ToolOptions means the zero value.
type ToolOptions = toolkit.ReaderOptions

// CheckArgs are sniff's arguments.
type CheckArgs struct {
	Text      string `json:"text,omitempty" jsonschema:"the response body as text; give text or path (binary bodies such as PDFs by path)"`
	Path      string `json:"path,omitempty" jsonschema:"path of the saved response body in a readable root; give text or path"`
	Expect    string `json:"expect" jsonschema:"the format the body should be: json, feed, html, pdf or csv"`
	MediaType string `json:"media_type,omitempty" jsonschema:"the Content-Type the body was served with, if known"`
}

var checkDescription = fmt.Sprintf(`Check that a response body is the format you expect before reading it: returns what it is (json, rss, atom, rdf, html, pdf, text, gzip, zip, binary...) and warnings (mismatched or generic media type, non-UTF-8 charset, script-rendered HTML, a JSON error object).
Rejects (integrity) an empty body, a wrong-format body (HTML where JSON or a feed was expected) and access screens in any format: login walls, cookie/consent walls, bot challenges, paywalls, error pages served with status 200.
PDF is recognised by its %%PDF- signature only: not parsed, no text extraction, no OCR. JSON, feeds and CSV are classified, not validated (use their readers).
Limits: %s by path; HTML is checked for access screens within the HTML reader's %s.
Example: {"path": "downloads/report.json", "expect": "json", "media_type": "application/json; charset=utf-8"}`,
	limits.Bytes(limits.SniffMaxBytes), limits.Bytes(limits.HTMLMaxBytes))

// RegisterTools registers sniff (effect parse, deferred).
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	o := opts.Value()
	return kernel.AddTool(b,
		o.Policy("sniff", limits.SniffToolMaxInputBytes),
		kernel.Meta{Effect: capability.Parse, Title: "Check content format", Summary: "Check a response body is the expected format (json, feed, html, pdf, csv) and not an access screen.", Description: checkDescription},
		func(ctx context.Context, call *kernel.Call, in CheckArgs) (Report, error) {
			expect, err := ParseFormat(in.Expect)
			if err != nil {
				return Report{}, err
			}
			data, err := toolkit.Read(ctx, call, o.Files, in.Text, in.Path, limits.SniffMaxBytes, "response body")
			if err != nil {
				return Report{}, err
			}
			r, err := Check(ctx, data, expect, in.MediaType)
			if err != nil {
				return Report{}, err
			}
			return *r, nil
		})
}
