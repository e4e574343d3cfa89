package mcpserver

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/internal/httpguard"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/semaphore"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// Path is where the Streamable HTTP endpoint is served.
const Path = "/mcp"

// ErrNonLoopback is the cause of the failure of Serve and ListenAndServe on
// an address that is not a loopback one, without Options.AllowNonLoopback.
var ErrNonLoopback = fault.NewMark("mcpserver: not a loopback address")

// Handler returns the Streamable HTTP handler, serving Path. Every request
// must name an allowed Host (loopback, the address it arrived at, or
// Options.AllowedHosts: this is the DNS-rebinding protection) and, when it
// has one, an allowed Origin (the same, or Options.AllowedOrigins); with
// Options.BearerToken or Options.Tenants it must carry a token (401
// otherwise). Each MCP session (one Mcp-Session-Id) gets its own kernel
// session, from the NewSession of the tenant whose token opened it, and
// refuses requests carrying another tenant's token (403); at most
// Options.MaxSessions live at once.
//
// The handler does not bind any address: mounted in another server, that
// server decides who can reach it. It does not do TLS (tokens cross plain
// HTTP in clear: put TLS in front of anything not loopback), it does not
// tell apart the holders of one token (each may use any session id of
// that token it learns), and it does not rate-limit calls: the kernel's
// per-session budgets bound each session, MaxSessions bounds how many
// there are. With options New could not use (Serve says why), it answers
// every request 500.
func (s *Server) Handler() http.Handler { return s.http }

// ListenAndServe listens on addr (host:port) and serves Handler until ctx
// ends, then stops gracefully: it closes the MCP sessions, lets requests in
// flight finish for up to limits.HTTPShutdownGrace, and returns nil. Unless
// Options.AllowNonLoopback, addr must name a loopback address ("localhost"
// or a loopback IP); anything else fails with ErrNonLoopback before
// listening.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	if s.http.err != nil {
		return s.http.err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fault.Wrap(fault.InvalidInput, err, "mcp listen address %q: want host:port", addr)
	}
	if !s.opts.AllowNonLoopback && !httpguard.IsLoopbackHost(host) {
		return nonLoopback(addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fault.Wrap(fault.Unavailable, err, "cannot listen on %s", addr)
	}
	return s.Serve(ctx, ln)
}

// Serve serves Handler on ln until ctx ends, then stops as ListenAndServe
// does. It closes ln. Unless Options.AllowNonLoopback, ln must be bound to a
// loopback address. A Server serves HTTP once: after Serve returns, its
// handler refuses new sessions.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.http.err != nil {
		ln.Close()
		return s.http.err
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !s.opts.AllowNonLoopback && (!ok || !tcp.IP.IsLoopback()) {
		ln.Close()
		return nonLoopback(ln.Addr().String())
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		s.http.port.Store(uint32(tcp.Port))
	}
	srv := &http.Server{
		Handler:           s.http,
		ReadHeaderTimeout: limits.HTTPReadHeaderTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if s.opts.OnServing != nil {
		// The socket has been listening since ln was made: what connects
		// from now on is served.
		s.opts.OnServing(ln.Addr())
	}
	select {
	case err := <-errc:
		return fault.Wrap(fault.Unavailable, err, "serving MCP over HTTP failed")
	case <-ctx.Done():
	}
	// Closing the sessions ends their event streams, which Shutdown would
	// otherwise wait for.
	s.http.stop()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limits.HTTPShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-errc
	return nil
}

func nonLoopback(addr string) error {
	return fault.Wrap(fault.Denied, ErrNonLoopback,
		"refusing to serve MCP on %s: not a loopback address (allow it explicitly, with a bearer token)", addr)
}

// httpHandler guards the SDK's Streamable HTTP handler and gives each new
// MCP session its own mcp.Server bound to a new kernel session.
type httpHandler struct {
	s        *Server
	sdk      http.Handler // the SDK's, behind withUser when there are tenants
	versions *mcp.Server  // what the SDK asks for on requests of existing sessions
	// tenants are the tokens a request may carry; without any, every
	// request is open's.
	tenants []*tenant
	open    *tenant
	err     error // options New could not use

	// stateless serves the 2026-07-28 protocol (Options.Stateless): every
	// such request of a tenant shares one kernel session, made on first
	// use.
	stateless *mcp.StreamableHTTPHandler

	inFlight *semaphore.Weighted // bytes of request bodies held
	port     atomic.Uint32       // the listener's port, once Serve knows it

	mu       sync.Mutex
	pending  int // requests that may create a session, in flight
	live     map[string]*liveSession
	stopping bool
}

// The requests that may create a session are bounded apart from live
// sessions (limits.MCPMaxPendingSessions) because the SDK's client sends a
// second such request (initialize, after a refused server/discover) as
// soon as the first is answered, before the first's handler has finished.

// bindingKey carries a new session's binding from ServeHTTP to getServer.
type bindingKey struct{}

func newHTTPHandler(s *Server) *httpHandler {
	h := &httpHandler{s: s, live: map[string]*liveSession{}, inFlight: semaphore.NewWeighted(s.opts.MaxInFlightBytes)}
	h.tenants, h.err = tenants(&s.opts, s.newSession)
	if len(h.tenants) == 0 {
		h.open = &tenant{newSession: s.newSession}
	}
	h.versions = mcp.NewServer(s.impl, &mcp.ServerOptions{Logger: s.log})
	sdk := mcp.NewStreamableHTTPHandler(h.getServer, &mcp.StreamableHTTPOptions{
		Logger:              s.log,
		SessionTimeout:      s.opts.SessionIdleTimeout,
		MaxRequestBodyBytes: limits.MCPMaxMessageBytes,
		// ServeHTTP checks Host (and Origin) on every request, whatever the
		// bound address; the SDK's own check would refuse AllowedHosts.
		DisableLocalhostProtection: true,
	})
	h.sdk = sdk
	if len(h.tenants) > 0 {
		h.sdk = withUser(sdk)
	}
	if s.opts.Stateless {
		h.stateless = mcp.NewStreamableHTTPHandler(h.statelessServer, &mcp.StreamableHTTPOptions{
			Logger:                     s.log,
			Stateless:                  true,
			MaxRequestBodyBytes:        limits.MCPMaxMessageBytes,
			DisableLocalhostProtection: true,
		})
	}
	return h
}

// statelessServer is the mcp.Server of the stateless protocol for the
// request's tenant, bound to one kernel session for all its requests.
// When that session cannot start the request is refused (nil) and the
// next one tries again.
func (h *httpHandler) statelessServer(r *http.Request) *mcp.Server {
	t := tenantOf(r.Context())
	if t == nil {
		return nil
	}
	t.statelessMu.Lock()
	defer t.statelessMu.Unlock()
	if t.statelessMS == nil {
		ks, err := h.s.startSession(context.WithoutCancel(r.Context()), t.newSession)
		if err != nil {
			h.s.log.Error("mcp: cannot start the stateless session", slog.String("tenant", t.name), slog.String("error", err.Error()))
			return nil
		}
		t.statelessMS = h.s.bind(ks, nil).ms
	}
	return t.statelessMS
}

// getServer is the SDK's hook. It is called on every request (for the
// protocol versions) and once more to connect a new session: only the
// request ServeHTTP prepared for a new session carries a binding.
func (h *httpHandler) getServer(r *http.Request) *mcp.Server {
	if b, ok := r.Context().Value(bindingKey{}).(*binding); ok {
		return b.ms
	}
	return h.versions
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.err != nil {
		h.s.log.Error("mcp: http request refused: the server's options are invalid", slog.String("error", h.err.Error()))
		http.Error(w, "the server is misconfigured", http.StatusInternalServerError)
		return
	}
	local := httpguard.LocalIP(r)
	if !h.hostAllowed(r.Host, local) {
		h.refuse(w, r, http.StatusForbidden, "forbidden: Host not allowed")
		return
	}
	if o := r.Header.Values("Origin"); len(o) > 1 || len(o) == 1 && !h.originAllowed(o[0], local) {
		h.refuse(w, r, http.StatusForbidden, "forbidden: Origin not allowed")
		return
	}
	t := h.open
	if t == nil {
		if t = h.authenticate(r); t == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="capkit"`)
			h.refuse(w, r, http.StatusUnauthorized, "unauthorized: bearer token required")
			return
		}
	}
	r = r.WithContext(context.WithValue(r.Context(), tenantKey{}, t))
	if r.URL.Path != Path {
		http.NotFound(w, r)
		return
	}
	if r.Method == http.MethodPost {
		release, ok := h.readBody(w, r)
		if !ok {
			return
		}
		defer release()
	}
	id := r.Header.Get("Mcp-Session-Id")
	switch {
	case id == "" && h.stateless != nil && isNewProtocol(r):
		h.stateless.ServeHTTP(w, r)
	case id == "" && r.Method == http.MethodPost:
		h.newSession(w, r, t)
	default:
		defer h.enter(id)()
		h.sdk.ServeHTTP(w, r)
	}
}

// refuse answers a request refused before the SDK sees it. The log gets
// the reason and the remote address, not the request's content.
func (h *httpHandler) refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.s.log.Warn("mcp: http request refused", slog.Int("status", status), slog.String("reason", msg),
		slog.String("remote", r.RemoteAddr), slog.String("host", clip.Text(r.Host)))
	http.Error(w, msg, status)
}

// newSession serves a POST without a session id: the SDK creates an MCP
// session for it (when it is a valid initialize), connected to a new
// mcp.Server bound to a new kernel session.
func (h *httpHandler) newSession(w http.ResponseWriter, r *http.Request, t *tenant) {
	if !h.reserve(t) {
		w.Header().Set("Retry-After", "10")
		h.refuse(w, r, http.StatusServiceUnavailable, "too many MCP sessions; retry later")
		return
	}
	ks, err := h.s.startSession(r.Context(), t.newSession)
	if err != nil {
		h.admit(nil, t, nil)
		h.s.log.Error("mcp: cannot start a session", slog.String("tenant", t.name), slog.String("error", err.Error()))
		http.Error(w, "cannot start a session", http.StatusInternalServerError)
		return
	}
	b := h.s.bind(ks, nil)
	h.sdk.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), bindingKey{}, b)))
	// The SDK keeps the session if the request initialized it, and closes
	// it otherwise (its removal from Sessions may lag).
	var ss *mcp.ServerSession
	for x := range b.ms.Sessions() {
		if x.InitializeParams() != nil {
			ss = x
		}
	}
	h.admit(ss, t, ks)
}

// reserve admits a request of tenant t that may create a session,
// evicting the least recently used idle session when all slots are taken:
// one of t's own if it has one idle, so that a tenant opening sessions
// evicts another's only when none of its own is idle.
func (h *httpHandler) reserve(t *tenant) bool {
	h.mu.Lock()
	if h.stopping || h.pending >= limits.MCPMaxPendingSessions {
		h.mu.Unlock()
		return false
	}
	var victim *mcp.ServerSession
	if len(h.live) >= h.s.opts.MaxSessions {
		if victim = h.evictLocked(t); victim == nil {
			h.mu.Unlock()
			return false
		}
	}
	h.pending++
	h.mu.Unlock()
	if victim != nil {
		h.s.log.Info("mcp: idle session evicted for a new one")
		victim.Close()
	}
	return true
}

// admit ends a reserved request and keeps the session it created, if any,
// until it ends. A session beyond MaxSessions (requests that raced to
// create one) is closed: the bound holds.
// The kernel session ks is closed when the MCP session ends, or at once
// when there is none.
func (h *httpHandler) admit(ss *mcp.ServerSession, t *tenant, ks *kernel.Session) {
	end := func() {
		if ks != nil {
			ks.Close()
		}
	}
	h.mu.Lock()
	h.pending--
	if ss == nil {
		h.mu.Unlock()
		end()
		return
	}
	if h.stopping || len(h.live) >= h.s.opts.MaxSessions {
		h.mu.Unlock()
		h.s.log.Warn("mcp: session closed: too many sessions")
		ss.Close()
		end()
		return
	}
	id := ss.ID()
	h.live[id] = &liveSession{ss: ss, tenant: t, last: time.Now()}
	h.mu.Unlock()
	go func() {
		ss.Wait()
		h.mu.Lock()
		if e := h.live[id]; e != nil && e.ss == ss {
			delete(h.live, id)
		}
		h.mu.Unlock()
		end()
	}()
}

// stop refuses new sessions and closes the live ones.
func (h *httpHandler) stop() {
	h.mu.Lock()
	h.stopping = true
	live := make([]*mcp.ServerSession, 0, len(h.live))
	for _, e := range h.live {
		live = append(live, e.ss)
	}
	h.mu.Unlock()
	for _, ss := range live {
		ss.Close()
	}
}

// hostAllowed reports whether a Host header names this server: a loopback
// name, the IP address the request arrived at (for a server bound beyond
// loopback, 0.0.0.0 included), or one of Options.AllowedHosts.
func (h *httpHandler) hostAllowed(host string, local net.IP) bool {
	name, port, ok := httpguard.SplitHost(host)
	if !ok {
		return false
	}
	if httpguard.IsLoopbackHost(name) || httpguard.IsLocalIP(name, local) {
		return h.portAllowed(port, "http")
	}
	for _, a := range h.s.opts.AllowedHosts {
		an, ap, ok := httpguard.SplitHost(a)
		if ok && strings.EqualFold(an, name) && (ap == "" || ap == port) {
			return true
		}
	}
	return false
}

// originAllowed reports whether a browser Origin may use this server: a
// loopback origin, the server's own (the IP address the request arrived
// at), or one of Options.AllowedOrigins.
func (h *httpHandler) originAllowed(origin string, local net.IP) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	if httpguard.IsLoopbackHost(u.Hostname()) || httpguard.IsLocalIP(u.Hostname(), local) {
		return h.portAllowed(u.Port(), u.Scheme)
	}
	o := strings.TrimSuffix(origin, "/")
	for _, a := range h.s.opts.AllowedOrigins {
		if strings.EqualFold(strings.TrimSuffix(a, "/"), o) {
			return true
		}
	}
	return false
}
