package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/fetch"
	"github.com/capkit/capkit/run/sandbox"
)

// link is one started upstream: the transport its client connects over,
// and how it is stopped and how it ended.
type link struct {
	transport mcp.Transport
	// pipe, for a stdio upstream, is the connection under transport,
	// which makes tools/call directly; nil over HTTP.
	pipe *pipeConn
	// stop asks the upstream to end and kills it after
	// limits.UpstreamStopGrace; it returns once it has ended.
	stop func()
	// ended says how a process ended (its exit status and the tail of
	// its standard error, secrets scrubbed), once it has; "" for HTTP.
	ended func() string
	// tooBig is set when the upstream sent a message past
	// limits.UpstreamMaxMessageBytes (and the link was cut for it).
	tooBig *atomic.Bool
}

// errTooBig cuts a link whose upstream sent an oversized message.
var errTooBig = errors.New("message too large")

// open starts u: its command (contained or not) or its HTTP client.
func (g *Gateway) open(ctx context.Context, u *Upstream) (*link, error) {
	if u.URL != "" {
		return openHTTP(u)
	}
	env, sc, err := u.environment()
	if err != nil {
		return nil, err
	}
	if u.Contain {
		return g.openContained(ctx, u, env, sc)
	}
	return openCommand(u, env, sc)
}

// openContained starts u's command in the container run/sandbox builds
// for contained commands.
func (g *Gateway) openContained(ctx context.Context, u *Upstream, env []string, sc secrets) (*link, error) {
	if len(g.opts.Helper) == 0 {
		return nil, fault.New(fault.Unavailable, "contained servers are not configured on this host (no sandbox helper)")
	}
	o := &sandbox.Options{Helper: g.opts.Helper, Reduced: g.opts.Reduced, RequireFull: g.opts.RequireFull,
		Quarantine: g.opts.Quarantine, MaxOutputBytes: limits.UpstreamStderrBytes}
	if u.Network != nil {
		o.Proxy = u.Network.WithTask("upstream:" + u.Name)
	}
	spec := u.spec(env, g.opts.Protected)
	spec.Limits = g.opts.Limits
	p, err := sandbox.Start(context.WithoutCancel(ctx), spec, o)
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "its command cannot be started contained")
	}
	l := &link{tooBig: new(atomic.Bool)}
	l.pipe = newPipeConn(p.Stdout, p.Stdin, l.tooBig)
	l.transport = pipeTransport{l.pipe}
	var res *sandbox.Result
	var werr error
	waited := sync.OnceFunc(func() { res, werr = p.Wait() })
	l.stop = func() {
		p.Stdin.Close()
		select {
		case <-p.Done():
		case <-time.After(limits.UpstreamStopGrace):
			p.Kill()
		}
		waited()
	}
	l.ended = func() string {
		waited()
		if werr != nil {
			return sc.scrub(werr.Error())
		}
		return sc.scrub(exitText(res))
	}
	return l, nil
}

// exitText says how a contained server ended.
func exitText(res *sandbox.Result) string {
	how := fmt.Sprintf("exit code %d", res.ExitCode)
	if res.Signal != "" {
		how = "killed by " + res.Signal
	}
	if res.Stderr.Text != "" {
		how += "; its standard error: " + strings.TrimSpace(res.Stderr.Text)
	}
	return how
}

// openCommand starts u's command as this process's user, in a process
// group of its own (killed whole when it stops), with a clean environment.
func openCommand(u *Upstream, env []string, sc secrets) (*link, error) {
	cmd := exec.Command(u.Command[0], u.Command[1:]...)
	cmd.Env, cmd.Dir = env, u.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr := &tailBuffer{max: limits.UpstreamStderrBytes}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "its command cannot be started")
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "its command cannot be started")
	}
	if err := cmd.Start(); err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "its command cannot be started")
	}
	done := make(chan struct{})
	var werr error
	go func() { werr = cmd.Wait(); close(done) }()
	l := &link{tooBig: new(atomic.Bool)}
	l.pipe = newPipeConn(stdout, stdin, l.tooBig)
	l.transport = pipeTransport{l.pipe}
	l.stop = func() {
		stdin.Close()
		select {
		case <-done:
		case <-time.After(limits.UpstreamStopGrace):
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	l.ended = func() string {
		<-done
		how := "exited"
		if werr != nil {
			how = werr.Error()
		}
		if s := strings.TrimSpace(stderr.String()); s != "" {
			how += "; its standard error: " + s
		}
		return sc.scrub(how)
	}
	return l, nil
}

// openHTTP makes the client of u's Streamable HTTP endpoint: dialled
// through the policy's destination guard (every address connected to is
// checked), verified with its trust roots, no redirect followed (a
// secret header must not follow one), its secret headers on every
// request, each message bounded.
func openHTTP(u *Upstream) (*link, error) {
	ep, err := url.Parse(u.URL)
	if err != nil || ep.Scheme != "https" || ep.Host == "" || ep.User != nil {
		return nil, fault.New(fault.InvalidInput, "its url must be an https URL without credentials")
	}
	headers := http.Header{}
	for _, k := range sortedKeys(u.SecretHeaders) {
		v, err := readSecret("secret_headers "+k, u.SecretHeaders[k])
		if err != nil {
			return nil, err
		}
		headers.Set(k, v)
	}
	d := fetch.NewDialer(u.Policy, nil)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			p, err := strconv.ParseUint(port, 10, 16)
			if err != nil {
				return nil, err
			}
			return d.Dial(ctx, host, uint16(p))
		},
		TLSClientConfig:        &tls.Config{RootCAs: u.Policy.RootCAs(), MinVersion: tls.VersionTLS12},
		MaxResponseHeaderBytes: 64 * limits.KiB,
		IdleConnTimeout:        30 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	l := &link{tooBig: new(atomic.Bool)}
	client := &http.Client{
		Transport:     &boundedTransport{rt: tr, headers: headers, over: l.tooBig},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	l.transport = &mcp.StreamableClientTransport{Endpoint: u.URL, HTTPClient: client, MaxEventSize: limits.UpstreamMaxMessageBytes}
	l.stop = tr.CloseIdleConnections
	l.ended = func() string { return "" }
	return l, nil
}

// boundedTransport adds the secret headers to every request and bounds
// every response body that is not an event stream (the SDK bounds each
// event of one) to limits.UpstreamMaxMessageBytes.
type boundedTransport struct {
	rt      http.RoundTripper
	headers http.Header
	over    *atomic.Bool
}

func (t *boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header[k] = v
	}
	resp, err := t.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &limitedBody{rc: resp.Body, left: limits.UpstreamMaxMessageBytes, over: t.over}
	}
	return resp, nil
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
	over *atomic.Bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.over.Store(true)
		return 0, errTooBig
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
