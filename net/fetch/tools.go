package fetch

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/kernel"
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
}

// FetchResult is the receipt; the body goes in the text only.
type FetchResult struct {
	Receipt *Receipt `json:"receipt"`
	// BodyOmitted says why the body is not in the text (not UTF-8).
	BodyOmitted string `json:"body_omitted,omitempty"`
	body        string
}

// ToolText is the receipt followed by the body.
func (r FetchResult) ToolText() string {
	if r.BodyOmitted != "" {
		return r.Receipt.Text() + "\n\nbody omitted: " + r.BodyOmitted
	}
	return r.Receipt.Text() + "\n\n" + r.body
}

var fetchDescription = fmt.Sprintf(`Fetch a public https URL (GET) and return the body with a receipt: final URL, redirects, status, selected headers, media type, byte counts, SHA-256, timings and budget charges.
Only https on port 443 (or ports the host's policy allows); no credentials, cookies, proxies or retries. Private, loopback, link-local (cloud metadata), multicast, documentation and other special-purpose addresses are refused (denied) wherever a name or redirect leads, unless the host's policy names them.
Limits: a body of at most %s after decoding (limit), at most %d redirects and %ds in all (or less, as the host's policy says). HTTP 4xx/5xx fail (http) with the status; certificate problems fail (tls); an exhausted or cooling-down budget fails (deferred) with the time to wait.
A body that is not UTF-8 is not shown; its size and SHA-256 are in the receipt. Give expect to check the format and refuse login walls and other access screens.
Example: {"url": "https://example.org/data.json", "expect": "json"}`,
	limits.Bytes(limits.FetchToolMaxBodyBytes), limits.FetchMaxRedirects, int(limits.FetchMaxDeadline.Seconds()))

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
		kernel.Policy{Name: "net_fetch", MaxInputBytes: limits.FetchToolMaxInputBytes, MaxOutputBytes: limits.FetchToolMaxOutputBytes, Timeout: limits.FetchMaxDeadline + limits.FetchSettleTimeout},
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
			out := FetchResult{Receipt: res.Receipt}
			if !utf8.Valid(res.Body) {
				out.BodyOmitted = fmt.Sprintf("%d bytes that are not UTF-8 text", len(res.Body))
			} else {
				out.body = string(res.Body)
			}
			return out, nil
		})
}
