// Package egress is the policy proxy through which contained commands
// reach the network: run/sandbox gives a command's container a listener
// on its own loopback, and a Proxy serves it from outside the container.
//
// It speaks HTTP/1.1 to the command, one request a connection. CONNECT
// host:port opens a tunnel whose bytes it relays without reading them
// (TLS is not intercepted: the command sees the server's real
// certificate); an absolute http:// request is forwarded, its response
// passed back. Either is admitted only when the HTTP policy (net/fetch)
// admits the destination: its port, its host name (the policy's
// "hosts"; an address is refused when the policy lists hosts), and, at
// dial time, every address actually dialled (net/fetch's guard: every
// special-purpose range unless reviewed in, DNS rebinding included).
// Names are resolved here, never by the command. A redirect is the
// command's to follow: its next request is checked like the first.
//
// Each tunnel or forwarded request is one of the policy's max_requests
// (counted per Serve, that is per command) and, with a budget, one
// admission, made durably before the destination is dialled: it reserves
// max_response_bytes (or what the window has left) and is settled to the
// bytes received. What the server sends is bounded by that reservation,
// or max_response_bytes without a budget: a tunnel or response that
// brings more is cut (the command sees a connection closed early, never
// a shorter body presented as whole). deadline_seconds bounds a tunnel's
// set-up (admission, DNS, connect) and a forwarded request's whole
// exchange; an open tunnel lasts while bytes move (limits.EgressIdleTimeout)
// and at most as long as its command. The bounds of the command's side
// (connections at once, header bytes and time) are limits.Egress*.
//
// The audit log gets one event per request the proxy answered: the task,
// host, port, kind, bytes each way, upstream status and outcome; never a
// path, a query or a body.
//
// The connection loop is written here, on net/http's request and
// response parsers and Transport, rather than on net/http's Server: a
// proxy must bound what it reads from the command exactly (the head's
// bytes and time) and relay a tunnel's raw bytes from the first one,
// which the Server's hijacked, buffered connections make awkward; no
// maintained module offers a policy-checked CONNECT proxy on a caller's
// dialer. A tunnel is relayed through a buffer, not spliced: splicing
// measured slower here for the contained download (bench/RESULTS.md).
package egress

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/budget"
	"github.com/capkit/capkit/net/fetch"
)

// Options configure New. Nil options are the defaults.
type Options struct {
	// Resolver resolves destination names; nil is the system's. Whatever
	// it answers, the guard checks the address dialled.
	Resolver *net.Resolver
	// Budget, when set, admits every tunnel and forwarded request
	// durably before its destination is dialled, charged to Task.
	Budget *budget.Budget
	// Task is the stable task identity budget charges go to; required
	// with Budget.
	Task string
	// Audit receives one event per request answered; nil disables it.
	Audit *slog.Logger
}

// Proxy serves commands' proxy connections under one policy. It is safe
// for concurrent use; each Serve is one command's.
type Proxy struct {
	policy    fetch.Policy
	dialer    *fetch.Dialer
	opts      Options
	transport *http.Transport
	// The time bounds of package limits; tests shorten them.
	headerTimeout, idleTimeout time.Duration
}

// New returns a Proxy for policy.
func New(policy *fetch.Policy, opts *Options) (*Proxy, error) {
	if policy == nil {
		return nil, fault.New(fault.InvalidInput, "egress: a policy is required")
	}
	p := &Proxy{policy: *policy,
		headerTimeout: limits.EgressHeaderTimeout, idleTimeout: limits.EgressIdleTimeout}
	if opts != nil {
		p.opts = *opts
	}
	if p.opts.Budget != nil && p.opts.Task == "" {
		return nil, fault.New(fault.InvalidInput, "egress: a budget needs a task identity")
	}
	p.dialer = fetch.NewDialer(policy, p.opts.Resolver)
	p.transport = &http.Transport{
		Proxy:                  nil,
		DialContext:            p.dialForward,
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxResponseHeaderBytes: limits.FetchMaxHeaderBytes,
	}
	return p, nil
}

// Policy is the policy the proxy admits destinations by.
func (p *Proxy) Policy() *fetch.Policy { return &p.policy }

// WithTask is the proxy charging its budget to task (a session's actor,
// say) and naming it in the audit; the rest is shared with p.
func (p *Proxy) WithTask(task string) *Proxy {
	c := *p
	c.opts.Task = task
	return &c
}

// Serve answers the connections l accepts, as one command's proxy, until
// l is closed or ctx ends; then it closes every connection and returns,
// one line each, what it refused (at most limits.EgressMaxNotes, and how
// many more), for the command's result.
func (p *Proxy) Serve(ctx context.Context, l net.Listener) []string {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &session{p: p}
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	slots := make(chan struct{}, limits.EgressMaxConns)
	var conns sync.WaitGroup
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		c, err := l.Accept()
		if err != nil {
			break
		}
		conns.Go(func() {
			defer func() { <-slots }()
			s.serveConn(ctx, c)
		})
	}
	cancel()
	conns.Wait()
	return s.report()
}

// session is one Serve: its request count and its refusals.
type session struct {
	p        *Proxy
	requests atomic.Int64
	mu       sync.Mutex
	notes    []string
	more     int
}

// refused records a refusal for the command's result.
func (s *session) refused(what string, err error) {
	note := fmt.Sprintf("the network proxy refused %s: %s (%s)", what, fault.As(err).Message, fault.CodeOf(err))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.notes {
		if n == note {
			return
		}
	}
	if len(s.notes) < limits.EgressMaxNotes {
		s.notes = append(s.notes, note)
	} else {
		s.more++
	}
}

func (s *session) report() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]string(nil), s.notes...)
	if s.more > 0 {
		out = append(out, fmt.Sprintf("the network proxy refused %d more requests (the audit log lists each)", s.more))
	}
	return out
}

// admit counts a request against max_requests and reserves its budget
// charge; the caller settles the reservation.
func (s *session) admit(ctx context.Context) (*budget.Reservation, error) {
	if n := s.requests.Add(1); n > int64(s.p.policy.MaxRequests) {
		return nil, fault.New(fault.Limit, "this command has made its %d requests (max_requests of the network policy)", s.p.policy.MaxRequests)
	}
	if s.p.opts.Budget == nil {
		return nil, nil
	}
	return s.p.opts.Budget.ReserveUpTo(ctx, s.p.opts.Task, s.p.policy.MaxResponseBytes)
}

// settle settles a reservation: used bytes, or the whole charge when
// used is negative (the outcome is unknown). A failure to settle leaves
// the charge in place, the safe side.
func (s *session) settle(ctx context.Context, r *budget.Reservation, used int64, out budget.Outcome) {
	if r == nil {
		return
	}
	if used < 0 || used > r.Bytes {
		used = r.Bytes
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limits.FetchSettleTimeout)
	defer cancel()
	s.p.opts.Budget.Settle(sctx, r.ID, used, out)
}

// maxReceived is what the server may send for one request: the
// reservation when there is one (it is at most max_response_bytes).
func (s *session) maxReceived(r *budget.Reservation) int64 {
	if r != nil {
		return r.Bytes
	}
	return s.p.policy.MaxResponseBytes
}

// record is what the audit says of one request.
type record struct {
	kind, method, host string
	port               uint16
	status             int
	sent, received     int64
	err                error
	start              time.Time
}

func (s *session) audit(ctx context.Context, r *record) {
	if s.p.opts.Audit == nil {
		return
	}
	outcome, reason := "ok", ""
	if r.err != nil {
		outcome, reason = string(fault.CodeOf(r.err)), fault.As(r.err).Message
	}
	attrs := []slog.Attr{slog.String("task", s.p.opts.Task), slog.String("kind", r.kind), slog.String("host", r.host), slog.Int("port", int(r.port)),
		slog.String("outcome", outcome), slog.Int64("bytes_sent", r.sent), slog.Int64("bytes_received", r.received),
		slog.Int64("duration_us", time.Since(r.start).Microseconds())}
	if r.method != "" {
		attrs = append(attrs, slog.String("method", r.method))
	}
	if r.status != 0 {
		attrs = append(attrs, slog.Int("status", r.status))
	}
	if reason != "" {
		attrs = append(attrs, slog.String("reason", reason))
	}
	s.p.opts.Audit.LogAttrs(context.WithoutCancel(ctx), slog.LevelInfo, "proxied request", attrs...)
}

// dialForward is the forwarding transport's dialer: the destination was
// checked before the request was sent; Dial checks it again, and the
// guard each address.
func (p *Proxy) dialForward(ctx context.Context, _, addr string) (net.Conn, error) {
	host, port, err := splitHostPort(addr)
	if err != nil {
		return nil, err
	}
	return p.dialer.Dial(ctx, host, port)
}

// splitHostPort reads host:port as a request names its destination.
func splitHostPort(addr string) (string, uint16, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fault.New(fault.InvalidInput, "destination %q is not host:port", clip.Text(addr))
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return "", 0, fault.New(fault.InvalidInput, "destination %q has no valid port", clip.Text(addr))
	}
	return host, uint16(n), nil
}
