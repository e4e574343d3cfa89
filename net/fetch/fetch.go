// Package fetch reads public HTTPS resources under a reviewed policy and
// returns the body with a receipt, without ever letting the request be
// turned inward (SSRF).
//
// The destination guard runs at dial time, on the address actually dialled
// (a net.Dialer Control hook), for every connection of every redirect hop,
// so DNS rebinding and names that resolve differently on a second lookup
// are caught where it matters. It refuses every IANA special-purpose IPv4
// and IPv6 range, IPv4-mapped and -compatible IPv6, NAT64, 6to4 and Teredo
// (naming any special address they embed), everything outside IPv6 global
// unicast, and ports other than 443 unless the policy allows them. Before
// any connection the URL is checked too: https only, no userinfo, no host
// names that are numbers in disguise (2130706433, 0x7f.1, 127.1). A policy
// may review exceptions in ("private_destinations", "ports", "ca_file");
// there is no other way in. A policy's "hosts" narrows the destinations to
// the host names it lists, checked before any DNS query.
//
// No proxy (HTTP_PROXY and friends are ignored), no cookies, no
// credentials and no automatic retries. Bounds (limits.Fetch*), narrowed by
// the policy: bytes on the wire and expanded (a Content-Encoding bomb stops
// at the bound), requests per Fetcher, redirects per fetch, and one total
// deadline over DNS, connect, TLS, headers and body. With a budget, every
// request is admitted durably before it is sent and settled after.
package fetch

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"crypto/tls"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/net/budget"
	"github.com/capkit/capkit/parse/sniff"
)

// DefaultUserAgent is sent when Options.UserAgent is empty. Like any
// User-Agent it proves nothing about the caller or the source.
const DefaultUserAgent = "Mozilla/5.0 (compatible; capkit-fetch/1)"

// Options configure New. Nil options are the defaults.
type Options struct {
	// Resolver resolves host names; nil is the system's. Whatever it
	// answers, the guard checks the address dialled.
	Resolver *net.Resolver
	// Budget, when set, admits every request (each redirect hop) durably
	// before it is sent, charged to Task.
	Budget *budget.Budget
	// Task is the stable task identity budget charges go to; required
	// with Budget.
	Task string
	// UserAgent replaces DefaultUserAgent.
	UserAgent string
	// Expect, when set, checks the body with sniff.Check: a wrong format
	// or an access screen fails (integrity) and the report goes in the
	// receipt.
	Expect sniff.Format
}

// Fetcher fetches under one policy. It is safe for concurrent use; its
// request bound (max_requests) counts every fetch it makes.
type Fetcher struct {
	policy    Policy
	guard     *guard
	dialer    *net.Dialer
	transport *http.Transport
	client    *http.Client
	opts      Options
	requests  atomic.Int64
}

// New returns a Fetcher for policy.
func New(policy *Policy, opts *Options) (*Fetcher, error) {
	if policy == nil {
		return nil, fault.New(fault.InvalidInput, "fetch: a policy is required")
	}
	f := &Fetcher{policy: *policy, guard: policy.guard()}
	if opts != nil {
		f.opts = *opts
	}
	if f.opts.Budget != nil {
		if f.opts.Task == "" {
			return nil, fault.New(fault.InvalidInput, "fetch: a budget needs a task identity")
		}
	}
	if f.opts.UserAgent == "" {
		f.opts.UserAgent = DefaultUserAgent
	}
	f.dialer = &net.Dialer{Control: f.guard.control, Resolver: f.opts.Resolver, KeepAlive: 15 * time.Second}
	f.transport = &http.Transport{
		Proxy:           nil,
		DialContext:     f.dialer.DialContext,
		TLSClientConfig: &tls.Config{RootCAs: policy.roots, MinVersion: tls.VersionTLS12},
		// HTTP/1.1 only: for one bulk response, Go's HTTP/2 client copies
		// every byte once more through its flow-control buffers
		// (bench/RESULTS.md), and a fetch makes one request at a time.
		TLSNextProto:           map[string]func(string, *tls.Conn) http.RoundTripper{},
		DisableCompression:     true,
		MaxResponseHeaderBytes: maxHeaderBytes,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
	}
	f.client = &http.Client{
		Transport:     f.transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return f, nil
}

// Close closes idle connections.
func (f *Fetcher) Close() { f.transport.CloseIdleConnections() }

// Response is a fetched body and its receipt.
type Response struct {
	Body    []byte
	Receipt *Receipt
}

// Fetch GETs rawURL, following redirects, and returns the final body.
// Failures: denied (the guard, with the rule), limit (a bound or the
// deadline), http (a 4xx/5xx status, with a *StatusError cause), tls
// (certificate or handshake failure), deferred (the budget), unavailable
// (DNS or connection failure), integrity (Options.Expect).
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Response, error) {
	ctx, cancel := context.WithTimeout(ctx, f.policy.Deadline())
	defer cancel()
	start := time.Now()
	rc := &Receipt{URL: rawURL, Redirects: []Hop{}}
	u, err := f.parse(rawURL, nil)
	if err != nil {
		return nil, err
	}
	for hop := 0; ; hop++ {
		res, next, err := f.hop(ctx, u, rc, start)
		if err != nil {
			return nil, f.deadline(ctx, err)
		}
		if next == nil {
			rc.Timings.TotalMS = ms(time.Since(start))
			return res, f.check(ctx, res)
		}
		if hop >= f.policy.MaxRedirects {
			return nil, fault.New(fault.Limit, "fetch: more than %d redirects (max_redirects); last to %s", f.policy.MaxRedirects, next.Redacted())
		}
		u = next
	}
}

// check runs the optional format check.
func (f *Fetcher) check(ctx context.Context, res *Response) error {
	if f.opts.Expect == "" {
		return nil
	}
	rep, err := sniff.Check(ctx, res.Body, f.opts.Expect, res.Receipt.Headers["content-type"])
	if err != nil {
		return err
	}
	res.Receipt.Sniff = rep
	return nil
}

// deadline reports the total deadline as the bound it is.
func (f *Fetcher) deadline(ctx context.Context, err error) error {
	if ctx.Err() != nil && fault.CodeOf(err) != fault.Denied {
		return fault.Wrap(fault.Limit, err, "fetch: the deadline of %ds (deadline_seconds) ended the fetch", f.policy.DeadlineSeconds)
	}
	return err
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// redirect statuses followed.
func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// selectedHeaders are copied into the receipt.
var selectedHeaders = []string{"Content-Type", "Content-Length", "Content-Encoding", "Content-Language",
	"Last-Modified", "ETag", "Date", "Cache-Control", "Expires", "Retry-After", "Location"}

func selectHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for _, k := range selectedHeaders {
		if v := h.Values(k); len(v) > 0 {
			s := strings.Join(v, ", ")
			if len(s) > maxHeaderValue {
				s = s[:maxHeaderValue] + "…(cut)"
			}
			out[strings.ToLower(k)] = s
		}
	}
	return out
}
