package fetch

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/toolkit"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/parse/sniff"
)

// ToolOptions configure RegisterTools.
type ToolOptions struct {
	// Policy is the reviewed HttpPolicy; without one net_fetch is not
	// registered.
	Policy *Policy
	// Fetch are the fetcher's options. An empty Task charges the budget to
	// the session's actor.
	Fetch *Options
}

// FetchArgs are net_fetch's arguments.
type FetchArgs struct {
	URL    string `json:"url" jsonschema:"the https URL to fetch"`
	Expect string `json:"expect,omitempty" jsonschema:"optional format the body must be: json, feed, html, pdf or csv (checked, and access screens refused)"`
	Offset int64  `json:"offset,omitempty" jsonschema:"byte offset in the body where the shown window starts: the previous answer's next_offset (the URL is fetched again); default 0"`
	SHA256 string `json:"sha256,omitempty" jsonschema:"the body's SHA-256 (hex) from the receipt of an earlier window: a body that has changed since fails with integrity instead of giving a window of another body"`
}

// FetchResult is the receipt; the body goes in the text only.
type FetchResult struct {
	Receipt *Receipt `json:"receipt"`
	// BodyOmitted says why the body is not in the text (not UTF-8).
	BodyOmitted string `json:"body_omitted,omitempty"`
	// Offset and ShownBytes are the window of the body in the text: its
	// bytes [offset, offset+shown_bytes). NextOffset is where the next
	// window starts; 0 when this one reaches the body's end.
	Offset     int64 `json:"offset,omitzero"`
	ShownBytes int64 `json:"shown_bytes"`
	NextOffset int64 `json:"next_offset,omitzero"`
	body       string
}

// ToolText is the receipt, the window's extent when it is not the whole
// body, and the window.
func (r FetchResult) ToolText() string {
	if r.BodyOmitted != "" {
		return r.Receipt.Text() + "\n\nbody omitted: " + r.BodyOmitted
	}
	if r.Offset == 0 && r.NextOffset == 0 {
		return r.Receipt.Text() + "\n\n" + r.body
	}
	end := r.Offset + r.ShownBytes
	extent := fmt.Sprintf("body bytes %d..%d of %d", r.Offset, end, r.Receipt.ExpandedBytes)
	if r.NextOffset > 0 {
		extent += fmt.Sprintf(" (a window: the rest is net_fetch with offset=%d and sha256=%s; that call fetches the URL again, a request of its own charged to any budget, and refuses a body that has changed)", r.NextOffset, r.Receipt.SHA256)
	}
	return r.Receipt.Text() + "\n" + extent + "\n\n" + r.body
}

// windowReserve is room kept in the output bound beside a window's frame
// for the digits its numbers may gain.
const windowReserve = 64

// window sets r's body to the window of body from offset on that fits
// max bytes beside r's receipt: all of it when it fits, else whole lines
// or whole characters; a window that cannot hold one character fails
// with limit.
func (r *FetchResult) window(call *kernel.Call, body []byte, offset int64) error {
	if offset < 0 || offset > int64(len(body)) {
		return fault.New(fault.InvalidInput, "offset %d is outside the body, which has %d bytes", offset, len(body))
	}
	if offset < int64(len(body)) && !utf8.RuneStart(body[offset]) {
		return fault.New(fault.InvalidInput, "offset %d is inside a UTF-8 character: pass an offset a previous answer gave (next_offset)", offset)
	}
	r.Offset, r.body, r.ShownBytes = offset, string(body[offset:]), int64(len(body))-offset
	all, err := kernel.Encode(*r)
	if err != nil || all.Size() <= call.MaxOutputBytes {
		return err
	}
	// The receipt and the extent line with the largest numbers they can
	// hold, without the body: what the window's bytes must leave room for.
	frame, err := kernel.Encode(FetchResult{Receipt: r.Receipt, Offset: offset, ShownBytes: r.ShownBytes, NextOffset: int64(len(body))})
	if err != nil {
		return err
	}
	win, next := toolkit.ByteWindow(string(body), offset, call.MaxOutputBytes-frame.Size()-windowReserve)
	if win == "" {
		return toolkit.UnitTooLarge(call, "the receipt and one character of the body", frame.Size(), "the receipt alone nearly fills it")
	}
	r.body, r.ShownBytes, r.NextOffset = win, int64(len(win)), next
	return nil
}

var fetchDescription = fmt.Sprintf(`Fetch a public https URL (GET) and return the body with a receipt: final URL, redirects, status, selected headers, media type, byte counts, SHA-256, timings and budget charges.
Only https on port 443 (or ports the host's policy allows); no credentials, cookies, proxies or retries. Private, loopback, link-local (cloud metadata), multicast, documentation and other special-purpose addresses are refused (denied) wherever a name or redirect leads, unless the host's policy names them.
Limits: a body of at most %s after decoding (limit), at most %d redirects and %ds in all (or less, as the host's policy says). HTTP 4xx/5xx fail (http) with the status; certificate problems fail (tls); an exhausted or cooling-down budget fails (deferred) with the time to wait.
The body is shown up to the output bound (%s unless the host sets another): a longer one comes as a window ending on a whole line, with next_offset, the byte offset to fetch again with (offset) for the rest (each window is a request of its own); pass the receipt's sha256 too, so that a body that changed in between fails (integrity) instead of mixing two bodies. A body that is not UTF-8 is not shown; its size and SHA-256 are in the receipt. Give expect to check the format and refuse login walls and other access screens.
Example: {"url": "https://example.org/data.json", "expect": "json"}`,
	limits.Bytes(limits.FetchToolMaxBodyBytes), limits.FetchMaxRedirects, int(limits.FetchMaxDeadline.Seconds()), limits.Bytes(limits.DefaultMaxOutputBytes))

// RegisterTools registers net_fetch (effect net_fetch, deferred) when
// opts carries a policy.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	if opts == nil || opts.Policy == nil {
		return nil
	}
	p := *opts.Policy
	p.MaxExpandedBytes = min(p.MaxExpandedBytes, limits.FetchToolMaxBodyBytes)
	var base Options
	if opts.Fetch != nil {
		base = *opts.Fetch
	}
	return kernel.AddTool(b,
		kernel.Policy{Name: "net_fetch", MaxInputBytes: limits.FetchToolMaxInputBytes, Timeout: limits.FetchMaxDeadline + limits.FetchSettleTimeout},
		kernel.Meta{Effect: capability.NetFetch, Title: "Fetch URL", Summary: "Fetch a public https URL under the host's network policy and budget; returns the body and a receipt.", Description: fetchDescription},
		func(ctx context.Context, call *kernel.Call, in FetchArgs) (FetchResult, error) {
			o := base
			if in.Expect != "" {
				f, err := sniff.ParseFormat(in.Expect)
				if err != nil {
					return FetchResult{}, err
				}
				o.Expect = f
			}
			if o.Task == "" {
				o.Task = call.Session.Actor()
			}
			// One fetcher per call: max_requests bounds one call's hops.
			f, err := New(&p, &o)
			if err != nil {
				return FetchResult{}, err
			}
			defer f.Close()
			res, err := f.Fetch(ctx, in.URL)
			if err != nil {
				return FetchResult{}, err
			}
			if in.SHA256 != "" && !strings.EqualFold(in.SHA256, res.Receipt.SHA256) {
				return FetchResult{}, fault.New(fault.Integrity, "the body changed since the earlier window: its sha256 is now %s, not %s; read it again from offset 0", res.Receipt.SHA256, clip.Text(in.SHA256))
			}
			out := FetchResult{Receipt: res.Receipt}
			if !utf8.Valid(res.Body) {
				out.BodyOmitted = fmt.Sprintf("%d bytes that are not UTF-8 text", len(res.Body))
				return out, nil
			}
			return out, out.window(call, res.Body, in.Offset)
		})
}
