package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// clientImpl is how capkit names itself to an upstream.
var clientImpl = &mcp.Implementation{Name: "capkit-gateway", Version: "1"}

// protocolVersion is the protocol capkit speaks to upstreams: the
// initialize handshake every server of the last years answers.
const protocolVersion = "2025-11-25"

// conn is the upstream process (or HTTP session) of one share key: at
// most one live at a time, started on demand, listed when started and on
// each list_changed, restarted after a crash.
type conn struct {
	up  *upstream
	key string

	mu sync.Mutex
	// live is the running session; nil when none runs.
	live *live
	// starting is closed when the start in progress ends; nil when none is.
	starting chan struct{}
	// failures counts starts in a row that failed or ended in a crash
	// with no call answered since; lastEnd is when the last one ended,
	// why what happened.
	failures int
	lastEnd  time.Time
	why      string
	// statuses are, by upstream tool name, why each approved tool is not
	// offered (nil: it is), as of the last listing; nil before any.
	statuses map[string]error
	// states are the approved tools' states as of the last listing, and
	// unapproved the tools it listed that the lock does not hold (what
	// awaits review): Gateway.Status reports them.
	states     map[string]ToolState
	unapproved []string
	// listing is set while a listing after list_changed runs; relist
	// asks it for one more.
	listing, relist bool
	relays          map[string]*relay
	seq             int
	closed          bool
}

// live is one running session of a conn.
type live struct {
	cs   *mcp.ClientSession
	link *link
	done chan struct{} // closed once the session ended
}

func newConn(u *upstream, key string) *conn {
	return &conn{up: u, key: key, relays: map[string]*relay{}}
}

// errStarting: an upstream whose first listing is not done yet offers
// nothing yet.
func (c *conn) errStarting() error {
	return fault.New(fault.Unavailable, "%s is starting", c.describe())
}

// session is the running session, started if need be. With wait, it
// waits within ctx for a start in progress, and for the delay after a
// failure; without, it starts the upstream in the background if it never
// ran, and fails at once otherwise. A start it waited for that failed is
// its failure: the next call tries again.
func (c *conn) session(ctx context.Context, wait bool) (*live, error) {
	waited := false
	for {
		c.mu.Lock()
		switch {
		case c.closed:
			c.mu.Unlock()
			return nil, errClosed(c.up.Name)
		case c.live != nil:
			l := c.live
			c.mu.Unlock()
			return l, nil
		case c.starting != nil:
			ch := c.starting
			c.mu.Unlock()
			if !wait {
				return nil, c.errStarting()
			}
			if err := waitFor(ctx, ch); err != nil {
				return nil, err
			}
			waited = true
			continue
		case c.failures >= limits.UpstreamMaxRestarts:
			err := fault.New(fault.Unavailable, "%s failed %d times in a row and is not started again until capkit restarts (last: %s)", c.describe(), c.failures, c.why)
			c.mu.Unlock()
			return nil, err
		case waited:
			err := fault.New(fault.Unavailable, "%s cannot be started: %s", c.describe(), c.why).RetryIn(backoff(c.failures))
			c.mu.Unlock()
			return nil, err
		}
		delay := time.Until(c.lastEnd.Add(backoff(c.failures)))
		if delay > 0 {
			why := c.why
			c.mu.Unlock()
			if !wait {
				return nil, c.errStarting()
			}
			if d, ok := ctx.Deadline(); ok && time.Until(d) < delay {
				return nil, fault.New(fault.Unavailable, "%s ended (%s) and is started again in %v, past this call's deadline", c.describe(), why, delay.Round(time.Millisecond)).RetryIn(delay)
			}
			if err := sleep(ctx, delay); err != nil {
				return nil, err
			}
			continue
		}
		ch := make(chan struct{})
		c.starting = ch
		restart := c.failures > 0
		c.mu.Unlock()
		go c.start(restart)
		if !wait {
			return nil, c.errStarting()
		}
		if err := waitFor(ctx, ch); err != nil {
			return nil, err
		}
		waited = true
	}
}

func waitFor(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// start starts the upstream, connects, lists its tools and applies the
// listing; or records why it could not.
func (c *conn) start(restart bool) {
	g := c.up.g
	ctx, cancel := context.WithTimeout(context.Background(), limits.UpstreamStartTimeout)
	defer cancel()
	l, err := g.open(ctx, &c.up.Upstream)
	var cs *mcp.ClientSession
	var defs map[string]*mcp.Tool
	if err == nil {
		client := mcp.NewClient(clientImpl, &mcp.ClientOptions{
			ToolListChangedHandler:      c.listChanged,
			ProgressNotificationHandler: c.progress,
		})
		cs, err = client.Connect(ctx, l.transport, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
		if err == nil {
			if defs, err = listedDefinitions(ctx, cs); err != nil {
				cs.Close()
			}
		}
		if err != nil {
			l.stop()
			if l.tooBig.Load() {
				err = fault.New(fault.Limit, "it sent a message of more than %s", limits.Bytes(limits.UpstreamMaxMessageBytes))
			} else if how := l.ended(); how != "" {
				err = fmt.Errorf("%w (%s)", err, how)
			}
		}
	}
	c.mu.Lock()
	ch := c.starting
	c.starting = nil
	if err == nil && c.closed {
		err = errStopped
	}
	if err != nil {
		c.failures++
		c.lastEnd, c.why = time.Now(), err.Error()
		n := c.failures
		c.mu.Unlock()
		close(ch)
		if cs != nil {
			cs.Close()
		}
		g.log.Warn("upstream did not start", slog.String("upstream", c.up.Name), slog.String("for", c.key), slog.Int("failures_in_a_row", n), slog.String("error", err.Error()))
		g.audited(ctx, "upstream start failed", c, slog.Int("failures_in_a_row", n))
		return
	}
	lv := &live{cs: cs, link: l, done: make(chan struct{})}
	c.live = lv
	changed := c.apply(defs)
	c.mu.Unlock()
	close(ch)
	go c.watch(lv)
	what := "upstream started"
	if restart {
		what = "upstream restarted"
	}
	g.log.Info(what, slog.String("upstream", c.up.Name), slog.String("for", c.key))
	g.audited(ctx, what, c)
	if changed {
		g.changed(c)
	}
}

// watch waits for the session to end, and records a crash (an end capkit
// did not ask for) for the next call to restart it.
func (c *conn) watch(lv *live) {
	lv.cs.Wait()
	// The next call starts another (after the delay) from now on; how
	// this one ended is known once it is gone.
	c.mu.Lock()
	if c.live == lv {
		c.live = nil
	}
	closed := c.closed
	if !closed {
		c.failures++
		c.lastEnd, c.why = time.Now(), "its connection ended"
	}
	c.mu.Unlock()
	close(lv.done)
	lv.link.stop()
	if closed {
		return
	}
	how := lv.link.ended()
	if lv.link.tooBig.Load() {
		how = fmt.Sprintf("it sent a message of more than %s and was stopped", limits.Bytes(limits.UpstreamMaxMessageBytes))
	}
	c.mu.Lock()
	if how != "" && c.live == nil && c.starting == nil {
		c.why = how
	}
	n := c.failures
	c.mu.Unlock()
	g := c.up.g
	g.log.Warn("upstream ended; it is started again on the next call", slog.String("upstream", c.up.Name), slog.String("for", c.key),
		slog.Int("failures_in_a_row", n), slog.String("how", how))
	g.audited(context.Background(), "upstream ended", c, slog.Int("failures_in_a_row", n))
}

// close stops the running session, if any, and refuses calls from then
// on.
func (c *conn) close() {
	c.mu.Lock()
	c.closed = true
	lv, ch := c.live, c.starting
	c.mu.Unlock()
	if ch != nil {
		<-ch // a start in progress sees closed and stops what it started
		c.mu.Lock()
		lv = c.live
		c.mu.Unlock()
	}
	if lv != nil {
		if lv.link.pipe != nil {
			// First: the session's close waits for its handlers, which
			// may wait to write to an upstream that reads nothing.
			lv.link.pipe.Close()
		}
		lv.cs.Close()
		lv.link.stop()
		<-lv.done
	}
}

// answered counts a call answered: the failures in a row end.
func (c *conn) answered() {
	c.mu.Lock()
	c.failures = 0
	c.mu.Unlock()
}

// apply records what a listing offers and reports whether that changed.
// Called with c.mu held.
func (c *conn) apply(defs map[string]*mcp.Tool) bool {
	old := c.statuses
	c.statuses, c.states = map[string]error{}, map[string]ToolState{}
	for name, t := range c.up.approved {
		c.states[name], c.statuses[name] = c.statusOf(t, defs[name])
	}
	var unapproved []string
	for name := range defs {
		if c.up.approved[name] == nil && c.up.allows(name) {
			unapproved = append(unapproved, name)
		}
	}
	if len(unapproved) > 0 {
		slices.Sort(unapproved)
		c.up.g.log.Info("upstream lists tools that are not approved (not offered)", slog.String("upstream", c.up.Name),
			slog.Int("count", len(unapproved)), slog.String("first", untrusted(unapproved[0])))
	}
	c.unapproved = unapproved
	return !sameStatuses(old, c.statuses)
}

// statusOf is t's state given its listed definition (nil when not
// listed), and why it is not offered, or nil when it is.
func (c *conn) statusOf(t *Tool, listed *mcp.Tool) (ToolState, error) {
	g := c.up.g
	if listed == nil {
		return StateMissing, fault.New(fault.Integrity, "tool %s is not offered: upstream %s no longer lists %s (removed or renamed since it was approved); the host reviews the upstream's tools: %s",
			t.Public, c.up.Name, t.Name, g.reviewText())
	}
	d, err := definitionOf(listed)
	if err != nil {
		return StateUnusable, fault.New(fault.Integrity, "tool %s is not offered: upstream %s lists it with a definition capkit cannot pin (%v); the host reviews it: %s", t.Public, c.up.Name, err, g.reviewText())
	}
	if d.Digest() != t.digest {
		g.log.Warn("upstream tool changed since it was approved: not offered", slog.String("upstream", c.up.Name), slog.String("tool", t.Name),
			slog.String("changed", strings.Join(d.Changes(t.Definition), ", ")))
		return StateChanged, fault.New(fault.Integrity, "tool %s is not offered: upstream %s changed its %s since it was approved; the host reviews and approves it again: %s",
			t.Public, c.up.Name, strings.Join(d.Changes(t.Definition), ", "), g.reviewText())
	}
	return StateApproved, nil
}

func sameStatuses(a, b map[string]error) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, ea := range a {
		eb, ok := b[k]
		if !ok || (ea == nil) != (eb == nil) || ea != nil && ea.Error() != eb.Error() {
			return false
		}
	}
	return true
}

// offered is why t is not offered now through c, or nil (see
// Gateway.Offered).
func (c *conn) offered(ctx context.Context, t *Tool) error {
	c.mu.Lock()
	st, listed := c.statuses[t.Name], c.statuses != nil
	c.mu.Unlock()
	if !listed {
		if _, err := c.session(ctx, ctx.Err() == nil); err != nil {
			return err
		}
		c.mu.Lock()
		st, listed = c.statuses[t.Name], c.statuses != nil
		c.mu.Unlock()
		if !listed {
			return c.errStarting()
		}
	}
	return st
}

// status is why t is not offered as of the last listing.
func (c *conn) status(t *Tool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.statuses == nil {
		return c.errStarting()
	}
	return c.statuses[t.Name]
}

// listChanged lists the upstream's tools again after its
// notifications/tools/list_changed, at most once per
// limits.UpstreamRelistInterval (notifications in between are taken
// together), and tells the watchers when what is offered changed. A
// listing that fails withdraws every tool until one succeeds.
func (c *conn) listChanged(_ context.Context, req *mcp.ToolListChangedRequest) {
	c.mu.Lock()
	if c.listing {
		c.relist = true
		c.mu.Unlock()
		return
	}
	c.listing = true
	c.mu.Unlock()
	go c.relistLoop(req.Session)
}

func (c *conn) relistLoop(cs *mcp.ClientSession) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), limits.UpstreamStartTimeout)
		defs, err := listedDefinitions(ctx, cs)
		cancel()
		c.mu.Lock()
		if c.live == nil || c.live.cs != cs {
			c.listing, c.relist = false, false
			c.mu.Unlock()
			return
		}
		var changed bool
		if err != nil {
			old := c.statuses
			c.statuses, c.states = map[string]error{}, map[string]ToolState{}
			for name, t := range c.up.approved {
				c.states[name] = StateMissing
				c.statuses[name] = fault.New(fault.Integrity, "tool %s is not offered: upstream %s announced a change of its tools and its listing failed (%v)", t.Public, c.up.Name, err)
			}
			changed = !sameStatuses(old, c.statuses)
		} else {
			changed = c.apply(defs)
		}
		again := c.relist
		c.relist = false
		c.listing = again
		c.mu.Unlock()
		if changed {
			c.up.g.log.Info("upstream tools listed again after list_changed", slog.String("upstream", c.up.Name), slog.String("for", c.key))
			c.up.g.changed(c)
		}
		if !again {
			return
		}
		time.Sleep(limits.UpstreamRelistInterval)
	}
}

// relay passes one call's progress reports on, at most one per
// limits.UpstreamProgressInterval, the latest one held until then.
type relay struct {
	mu      sync.Mutex
	f       func(progress, total float64, message string)
	last    time.Time
	pending *progressReport
	timer   *time.Timer
	stopped bool
}

type progressReport struct {
	progress, total float64
	message         string
}

// addRelay registers f for a call's progress under a fresh token.
func (c *conn) addRelay(f func(progress, total float64, message string)) (string, func()) {
	c.mu.Lock()
	c.seq++
	tok := "capkit-" + strconv.Itoa(c.seq)
	r := &relay{f: f}
	c.relays[tok] = r
	c.mu.Unlock()
	return tok, func() {
		c.mu.Lock()
		delete(c.relays, tok)
		c.mu.Unlock()
		r.stop()
	}
}

// progress takes an upstream's notifications/progress: a token no call
// of this connection gave is ignored.
func (c *conn) progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	tok, _ := req.Params.ProgressToken.(string)
	c.mu.Lock()
	r := c.relays[tok]
	c.mu.Unlock()
	if r != nil {
		r.report(progressReport{req.Params.Progress, req.Params.Total, clipText(req.Params.Message, limits.UpstreamSummaryBytes)})
	}
}

func (r *relay) report(p progressReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	if wait := time.Until(r.last.Add(limits.UpstreamProgressInterval)); wait > 0 {
		r.pending = &p
		if r.timer == nil {
			r.timer = time.AfterFunc(wait, r.flush)
		}
		return
	}
	r.pending = nil // this one is later than what is held
	r.send(p)
}

// send passes p on now. Called with r.mu held.
func (r *relay) send(p progressReport) {
	r.last = time.Now()
	r.f(p.progress, p.total, p.message)
}

// flush passes on what is held, once the interval since the last report
// has passed (a report may have gone meanwhile).
func (r *relay) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timer = nil
	if r.stopped || r.pending == nil {
		return
	}
	if wait := time.Until(r.last.Add(limits.UpstreamProgressInterval)); wait > 0 {
		r.timer = time.AfterFunc(wait, r.flush)
		return
	}
	p := *r.pending
	r.pending = nil
	r.send(p)
}

func (r *relay) stop() {
	r.mu.Lock()
	r.stopped = true
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
}

// audited records an upstream's start or end in the audit log.
func (g *Gateway) audited(ctx context.Context, what string, c *conn, attrs ...slog.Attr) {
	if g.opts.Audit == nil {
		return
	}
	attrs = append([]slog.Attr{slog.String("upstream", c.up.Name), slog.String("for", c.key)}, attrs...)
	g.opts.Audit.LogAttrs(ctx, slog.LevelInfo, what, attrs...)
}
