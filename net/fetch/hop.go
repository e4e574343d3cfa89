package fetch

import (
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/budget"
)

const (
	maxHeaderBytes = limits.FetchMaxHeaderBytes
	maxHeaderValue = limits.FetchReceiptHeaderBytes
	// maxRetryAfterEcho bounds a Retry-After value quoted in a message.
	maxRetryAfterEcho = 64
)

// parse resolves raw against base (a redirect's Location) and checks it.
func (f *Fetcher) parse(raw string, base *url.URL) (*url.URL, error) {
	if len(raw) > limits.FetchMaxURLBytes {
		return nil, fault.LimitExceeded("fetch: URL bytes", limits.FetchMaxURLBytes, int64(len(raw)))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fault.New(fault.InvalidInput, "fetch: not a URL: %v", errors.Unwrap(err))
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	u.Fragment, u.RawFragment = "", ""
	if err := f.guard.checkURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

// hop sends one request. It returns the final response, or the next URL
// of a redirect.
func (f *Fetcher) hop(ctx context.Context, u *url.URL, rc *Receipt, start time.Time) (*Response, *url.URL, error) {
	if n := f.requests.Add(1); n > int64(f.policy.MaxRequests) {
		return nil, nil, fault.New(fault.Limit, "fetch: this fetcher has sent its %d requests (max_requests)", f.policy.MaxRequests)
	}
	charge, err := f.reserve(ctx)
	if err != nil {
		f.requests.Add(-1) // not sent
		return nil, nil, err
	}
	sent := false
	trace := rc.Timings.trace(start, &sent)
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, u.String(), nil)
	if err != nil {
		f.settle(ctx, charge, 0, nil)
		return nil, nil, fault.Wrap(fault.InvalidInput, err, "fetch: bad request URL")
	}
	req.Header.Set("User-Agent", f.opts.UserAgent)
	req.Header.Set("Accept", "*/*")
	req.Header.Set("Accept-Encoding", "gzip, deflate")
	resp, err := f.client.Do(req)
	if err != nil {
		used := int64(0)
		if sent {
			used = -1 // the request may have reached the server: keep the charge
		}
		f.settle(ctx, charge, used, nil)
		return nil, nil, transportFault(err, u.Hostname())
	}
	defer resp.Body.Close()
	rc.record(charge)
	if isRedirect(resp.StatusCode) {
		next, err := f.redirect(ctx, u, resp, rc, charge)
		return nil, next, err
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return nil, nil, f.failStatus(ctx, u, resp, rc, charge)
	}
	res, err := f.body(ctx, u, resp, rc, charge)
	return res, nil, err
}

// redirect drains a redirect's body and returns the checked Location.
func (f *Fetcher) redirect(ctx context.Context, u *url.URL, resp *http.Response, rc *Receipt, charge *budget.Reservation) (*url.URL, error) {
	n := drain(resp.Body, charge)
	f.settle(ctx, charge, n, resp)
	loc := resp.Header.Get("Location")
	rc.Redirects = append(rc.Redirects, Hop{URL: u.Redacted(), Status: resp.StatusCode, Location: loc})
	rc.WireBytes += n
	if loc == "" {
		return nil, fault.New(fault.HTTP, "fetch: HTTP %d from %s without a Location", resp.StatusCode, u.Redacted())
	}
	next, err := f.parse(loc, u)
	if err != nil {
		return nil, err
	}
	return next, nil
}

// drain reads (and counts) what a redirect or error body brings, at most
// limits.FetchDrainBytes and never more than the budget reserved.
func drain(r io.Reader, charge *budget.Reservation) int64 {
	max := int64(limits.FetchDrainBytes)
	if charge != nil {
		max = min(max, charge.Bytes)
	}
	n, _ := io.Copy(io.Discard, io.LimitReader(r, max))
	return n
}

// StatusError is the cause of an http failure: the status and the receipt
// up to it.
type StatusError struct {
	Status  int
	Receipt *Receipt
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d", e.Status) }

func (f *Fetcher) failStatus(ctx context.Context, u *url.URL, resp *http.Response, rc *Receipt, charge *budget.Reservation) error {
	n := drain(resp.Body, charge)
	f.settle(ctx, charge, n, resp)
	rc.finish(u, resp)
	rc.WireBytes += n
	retry := ""
	if s := resp.Header.Get("Retry-After"); s != "" && len(s) <= maxRetryAfterEcho && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		retry = " (Retry-After " + s + ")"
	}
	return fault.Wrap(fault.HTTP, &StatusError{Status: resp.StatusCode, Receipt: rc}, "fetch: HTTP %d %s from %s%s",
		resp.StatusCode, http.StatusText(resp.StatusCode), u.Redacted(), retry)
}

// body reads the final response within the wire and expanded bounds.
func (f *Fetcher) body(ctx context.Context, u *url.URL, resp *http.Response, rc *Receipt, charge *budget.Reservation) (*Response, error) {
	rc.finish(u, resp)
	maxWire, maxExp := f.policy.MaxResponseBytes, f.policy.MaxExpandedBytes
	if charge != nil {
		maxWire = min(maxWire, charge.Bytes)
	}
	if resp.ContentLength > maxWire {
		f.settle(ctx, charge, -1, resp)
		return nil, fault.LimitExceeded("fetch: response bytes (Content-Length, max_response_bytes)", maxWire, resp.ContentLength)
	}
	wire := &counter{r: resp.Body}
	src, err := decoder(resp.Header.Get("Content-Encoding"), io.LimitReader(wire, maxWire+1))
	if err != nil {
		f.settle(ctx, charge, -1, resp)
		return nil, err
	}
	if src == nil {
		src = io.LimitReader(wire, maxWire+1)
	}
	body, sum, err := readAll(src, resp.ContentLength, maxExp+1)
	switch {
	case wire.n > maxWire && maxWire < f.policy.MaxResponseBytes:
		err = fault.LimitExceeded("fetch: response bytes on the wire (what the budget had left to reserve)", maxWire, 0)
	case wire.n > maxWire:
		err = fault.LimitExceeded("fetch: response bytes on the wire (max_response_bytes)", maxWire, 0)
	case int64(len(body)) > maxExp:
		err = fault.LimitExceeded("fetch: expanded response bytes (max_expanded_bytes)", maxExp, 0)
	case err != nil:
		err = readFault(err, u)
	}
	if err != nil {
		f.settle(ctx, charge, -1, resp)
		return nil, err
	}
	f.settle(ctx, charge, wire.n, resp)
	rc.WireBytes += wire.n
	rc.ExpandedBytes = int64(len(body))
	rc.SHA256 = hex.EncodeToString(sum)
	return &Response{Body: body, Receipt: rc}, nil
}

// readAll reads r to its end or to max bytes, and hashes what it read
// with SHA-256 on another goroutine as it goes (on a multi-core machine the
// hash then costs no extra time). A known length sizes the buffer once
// (one byte more, to see the end); otherwise it doubles from readStart,
// never past max. Chunks handed to the hasher are never written again: the
// buffer only grows past them, and a grown buffer is a copy.
func readAll(r io.Reader, length, max int64) ([]byte, []byte, error) {
	size := int64(readStart)
	if length >= 0 {
		size = length + 1
	}
	buf := make([]byte, 0, min(size, max))
	chunks := make(chan []byte, 16)
	sum := make(chan []byte, 1)
	go func() {
		h := sha256.New()
		for c := range chunks {
			h.Write(c)
		}
		sum <- h.Sum(nil)
	}()
	hashed := 0
	var err error
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) >= max {
				break
			}
			buf = slices.Grow(buf, int(min(int64(cap(buf)), max-int64(cap(buf)))))
		}
		var n int
		n, err = r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf)-hashed >= hashChunk {
			chunks <- buf[hashed:len(buf):len(buf)]
			hashed = len(buf)
		}
		if err != nil {
			break
		}
	}
	if err == io.EOF {
		err = nil
	}
	chunks <- buf[hashed:len(buf):len(buf)]
	close(chunks)
	return buf, <-sum, err
}

// hashChunk is how many bytes are read before they go to the hasher.
const hashChunk = 256 << 10

const readStart = 64 << 10

// decoder undoes a Content-Encoding; nil for none.
func decoder(enc string, r io.Reader) (io.Reader, error) {
	switch strings.ToLower(strings.TrimSpace(enc)) {
	case "", "identity":
		return nil, nil
	case "gzip", "x-gzip":
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, fault.Wrap(fault.Integrity, err, "fetch: the gzip body is corrupt")
		}
		return z, nil
	case "deflate":
		z, err := zlib.NewReader(r)
		if err != nil {
			return nil, fault.Wrap(fault.Integrity, err, "fetch: the deflate body is corrupt")
		}
		return z, nil
	}
	return nil, fault.New(fault.HTTP, "fetch: the server sent Content-Encoding %q, which was not asked for (gzip, deflate)", enc)
}

type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func readFault(err error, u *url.URL) error {
	if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, zlib.ErrChecksum) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fault.Wrap(fault.Integrity, err, "fetch: the body from %s is truncated or corrupt", u.Redacted())
	}
	return transportFault(err, u.Hostname())
}

// transportFault turns a failure to reach host, or to read from it, into
// a fault.
func transportFault(err error, host string) error {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return fe
	}
	if m, ok := tlsReason(err); ok {
		return fault.Wrap(fault.TLS, err, "fetch: TLS with %s failed: %s", host, m)
	}
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fault.Wrap(fault.Limit, err, "fetch: deadline reached")
	case errors.Is(err, context.Canceled):
		return fault.Wrap(fault.Unavailable, err, "fetch: canceled")
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return fault.Wrap(fault.NotFound, err, "fetch: host %s does not resolve", host)
	case errors.As(err, &dnsErr):
		return fault.Wrap(fault.Unavailable, err, "fetch: resolving %s failed", host)
	}
	return fault.Wrap(fault.Unavailable, err, "fetch: connecting to %s failed", host)
}

// tlsReason names a certificate or handshake failure.
func tlsReason(err error) (string, bool) {
	var (
		inv   x509.CertificateInvalidError
		name  x509.HostnameError
		auth  x509.UnknownAuthorityError
		verr  *tls.CertificateVerificationError
		rec   tls.RecordHeaderError
		alert tls.AlertError
	)
	switch {
	case errors.As(err, &inv) && inv.Reason == x509.Expired:
		return "the certificate is expired or not yet valid", true
	case errors.As(err, &inv):
		return "the certificate is invalid: " + inv.Error(), true
	case errors.As(err, &name):
		return "the certificate is not valid for this name", true
	case errors.As(err, &auth):
		return "the certificate is signed by an unknown authority (a policy may add a trust root with \"ca_file\")", true
	case errors.As(err, &verr):
		return "the certificate did not verify", true
	case errors.As(err, &rec):
		return "the server did not speak TLS", true
	case errors.As(err, &alert):
		return "the server sent alert " + alert.Error(), true
	}
	if strings.Contains(err.Error(), "tls: ") {
		return "handshake failed", true
	}
	return "", false
}

// reserve admits one request against the budget, if any: as many bytes
// as the response may bring on the wire, which is max_response_bytes or,
// when less is left of the budget's window, what is left (and the
// response is then bounded by that).
func (f *Fetcher) reserve(ctx context.Context) (*budget.Reservation, error) {
	if f.opts.Budget == nil {
		return nil, nil
	}
	return f.opts.Budget.ReserveUpTo(ctx, f.opts.Task, f.policy.MaxResponseBytes)
}

// settle settles a reservation: used bytes, or the whole charge when used
// is negative (the outcome is unknown). A failure to settle leaves the
// charge in place, which is the safe side, so it is not reported.
func (f *Fetcher) settle(ctx context.Context, r *budget.Reservation, used int64, resp *http.Response) {
	if r == nil {
		return
	}
	if used < 0 || used > r.Bytes {
		used = r.Bytes
	}
	var out budget.Outcome
	if resp != nil {
		out = budget.Outcome{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	}
	// Settle even when the fetch's deadline has passed.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limits.FetchSettleTimeout)
	defer cancel()
	f.opts.Budget.Settle(sctx, r.ID, used, out)
}

func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ""
	}
	return mt
}
