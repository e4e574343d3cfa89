package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/net/budget"
)

// forward answers a request for an absolute http:// URL: it admits the
// destination, sends the request there (without the hop-by-hop headers),
// and passes the response back, its body within the bound, all within
// the policy's deadline. The connection closes after it.
func (s *session) forward(ctx context.Context, c net.Conn, req *http.Request) {
	rec := &record{kind: "http", method: req.Method, start: time.Now()}
	defer s.audit(ctx, rec)
	host, port, err := target(req.URL)
	rec.host, rec.port = host, port
	what := clip.Text(req.Method) + " http://" + net.JoinHostPort(clip.Text(host), strconv.Itoa(int(port)))
	if err == nil {
		err = s.p.dialer.Check(host, port)
	}
	if err != nil {
		s.refuse(c, rec, what, statusOf(err), err)
		return
	}
	charge, err := s.admit(ctx)
	if err != nil {
		s.refuse(c, rec, what, statusOf(err), err)
		return
	}
	fctx, cancel := context.WithTimeout(ctx, s.p.policy.Deadline())
	defer cancel()
	// The whole exchange, the command's side included, ends at the
	// deadline.
	stop := context.AfterFunc(fctx, func() { c.Close() })
	defer stop()
	var wrote atomic.Bool
	out, sent := outgoing(httptrace.WithClientTrace(fctx, &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }}), req, host, port)
	resp, err := s.p.transport.RoundTrip(out)
	rec.sent = sent.n.Load()
	if err != nil {
		used := int64(0)
		if wrote.Load() {
			used = -1 // the server may have seen the request: keep the charge
		}
		s.settle(ctx, charge, used, budget.Outcome{})
		err = roundTripFault(err, fctx, host, s.p.policy.DeadlineSeconds)
		s.refuse(c, rec, what, dialStatus(err), err)
		return
	}
	defer resp.Body.Close()
	rec.status = resp.StatusCode
	outcome := budget.Outcome{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	max := s.maxReceived(charge)
	if resp.ContentLength > max {
		s.settle(ctx, charge, 0, outcome)
		err := fault.LimitExceeded("the response's bytes (max_response_bytes of the network policy, or what its budget had left)", max, resp.ContentLength)
		s.refuse(c, rec, what, http.StatusBadGateway, err)
		return
	}
	body := &boundedBody{r: resp.Body, max: max}
	resp.Body = body
	removeHopHeaders(resp.Header)
	resp.Close = true
	werr := resp.Write(c)
	rec.sent, rec.received = sent.n.Load(), body.n
	s.settle(ctx, charge, body.n, outcome)
	switch {
	case body.over:
		rec.err = fault.New(fault.Limit, "the response brought more than the %d bytes a response may (max_response_bytes of the network policy, or what its budget had left); it was cut", max)
		s.refused(what, rec.err)
	case werr != nil && fctx.Err() != nil && ctx.Err() == nil:
		rec.err = fault.New(fault.Limit, "the exchange took longer than the network policy's deadline_seconds (%d s) and was cut", s.p.policy.DeadlineSeconds)
		s.refused(what, rec.err)
	case werr != nil:
		rec.err = fault.Wrap(fault.Unavailable, werr, "the response could not be passed on whole")
	}
}

// target is the destination of an absolute http:// URL: its host and
// port (80 when it names none).
func target(u *url.URL) (string, uint16, error) {
	switch {
	case u.Scheme == "https":
		return u.Hostname(), 443, fault.New(fault.InvalidInput, "an https:// URL goes through CONNECT (the proxy does not make TLS connections for the command)")
	case u.Scheme != "http" || u.Host == "":
		return "", 0, fault.New(fault.InvalidInput, "a proxy request names an absolute http:// URL, or is CONNECT host:port")
	case u.User != nil:
		return u.Hostname(), 0, fault.New(fault.Denied, "the URL carries userinfo (credentials are not forwarded)")
	}
	if u.Port() == "" {
		return u.Hostname(), 80, nil
	}
	return splitHostPort(u.Host)
}

// counter counts the bytes of the request body sent.
type counter struct {
	r io.ReadCloser
	n atomic.Int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *counter) Close() error { return c.r.Close() }

// outgoing is the request sent on: the command's, to host:port, without
// its hop-by-hop headers, its body counted.
func outgoing(ctx context.Context, req *http.Request, host string, port uint16) (*http.Request, *counter) {
	out := req.Clone(ctx)
	out.RequestURI = ""
	out.URL.Host = net.JoinHostPort(host, strconv.Itoa(int(port)))
	out.Host = out.URL.Host
	if port == 80 {
		out.Host = host
	}
	out.Close = true
	removeHopHeaders(out.Header)
	body := &counter{r: req.Body}
	if req.Body == nil || req.Body == http.NoBody {
		body.r = http.NoBody
		out.Body = http.NoBody
	} else {
		out.Body = body
	}
	return out, body
}

// hopHeaders concern one connection, not the request (RFC 9110, 7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// boundedBody passes at most max bytes of a response body; one more is
// an error, so the response is cut where the command can tell (its
// framing is left incomplete), never passed as whole.
type boundedBody struct {
	r    io.ReadCloser
	max  int64
	n    int64
	over bool
}

var errBodyTooLarge = errors.New("the response body is larger than its bound")

func (b *boundedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.max-b.n+1 {
		p = p[:b.max-b.n+1]
	}
	n, err := b.r.Read(p)
	if b.n+int64(n) > b.max {
		b.over = true
		n = int(b.max - b.n)
		b.n = b.max
		return n, errBodyTooLarge
	}
	b.n += int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.r.Close() }

// roundTripFault is the fault of a failed forward: the dialer's own, a
// deadline, or an upstream that did not answer.
func roundTripFault(err error, ctx context.Context, host string, deadline int) error {
	var fe *fault.Error
	isFault := errors.As(err, &fe)
	switch {
	case isFault && fe.Code == fault.Denied:
		return fe
	case ctx.Err() != nil:
		return fault.Wrap(fault.Limit, err, "the exchange with %s took longer than the network policy's deadline_seconds (%d s)", host, deadline)
	case isFault:
		return fe
	}
	return fault.Wrap(fault.Unavailable, err, "the server %s did not answer the request", host)
}
