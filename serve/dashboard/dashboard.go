package dashboard

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/gateway"
	"github.com/capkit/capkit/internal/httpguard"
	"github.com/capkit/capkit/limits"
)

// CSP is the Content-Security-Policy of every answer: the page's own
// script, style and images, its own API, nothing inline, never framed.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// CookieName is the cookie a token given as ?token= is kept in.
const CookieName = "capkit_dashboard"

// ErrNonLoopback is the cause of the failure of Serve on an address that
// is not a loopback one without a token.
var ErrNonLoopback = fault.NewMark("dashboard: not a loopback address")

//go:embed assets
var assets embed.FS

// indexHTML is the page, with the bounds its script draws within.
var indexHTML = func() []byte {
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		panic(err)
	}
	return bytes.ReplaceAll(page, []byte("{{chart_tools}}"), []byte(strconv.Itoa(limits.DashboardChartTools)))
}()

// Budget is one budget's use in its current window.
type Budget struct {
	// Group names the budget ([net]'s budget group).
	Group string `json:"group"`
	// Unit is what is counted: "requests" or "bytes".
	Unit  string `json:"unit"`
	Used  int64  `json:"used"`
	Limit int64  `json:"limit"`
	// WindowStart and WindowSeconds are the current window's start and
	// length; Remaining is the time left in it.
	WindowStart   time.Time `json:"window_start"`
	WindowSeconds int64     `json:"window_seconds"`
	Remaining     float64   `json:"window_remaining_seconds"`
	// State is the group's: active, sealed or transferred.
	State string `json:"state"`
}

// Host is what the page shows of the host beside its trail.
type Host interface {
	// Budgets are the budgets and their use now.
	Budgets(ctx context.Context) []Budget
	// UpstreamStatus lists the upstream tools awaiting review or
	// withdrawn.
	UpstreamStatus() []gateway.ToolStatus
}

// Options configure a Dashboard; nil means the defaults.
type Options struct {
	// Token, when set, is what every request must carry (visible ASCII
	// without spaces); without one, Serve binds loopback addresses only.
	Token string
	// Host is the host's state; nil shows no budgets and no upstreams.
	Host Host
	// AllowedHosts are Host headers accepted besides loopback names and
	// the address a request arrived at (NAME or NAME:PORT).
	AllowedHosts []string
	// Describe says what the source is, for the page ("in memory: …",
	// "file …", "store").
	Describe string
	// ChainHint, for a source that is not chained (in memory), says where
	// the chained trail is and how to read it.
	ChainHint string
	Log       *slog.Logger
}

// Dashboard is the page and its API over one source: an http.Handler.
type Dashboard struct {
	src    audit.Source
	opts   Options
	log    *slog.Logger
	digest httpguard.Digest
	cookie string // the cookie's value: a MAC of the token, not the token
	live   chan struct{}
	counts chan struct{} // the /api/stats answers being computed
	port   atomic.Uint32
}

// New returns the dashboard of src. It fails on a token that is not
// visible ASCII without spaces.
func New(src audit.Source, opts *Options) (*Dashboard, error) {
	d := &Dashboard{src: src, live: make(chan struct{}, limits.DashboardLiveClients), counts: make(chan struct{}, limits.DashboardStatsAtOnce)}
	if opts != nil {
		d.opts = *opts
	}
	d.log = d.opts.Log
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if t := d.opts.Token; t != "" {
		if !httpguard.VisibleToken(t) {
			return nil, fault.New(fault.InvalidInput, "dashboard: the token is not visible ASCII without spaces")
		}
		d.digest = httpguard.DigestOf(t)
		mac := hmac.New(sha256.New, []byte(t))
		mac.Write([]byte("capkit dashboard cookie v1"))
		d.cookie = hex.EncodeToString(mac.Sum(nil))
	}
	return d, nil
}

// ServeHTTP answers GET requests of the page, its assets and its API;
// any other method is refused (405).
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet {
		h.Set("Allow", http.MethodGet)
		d.refuse(w, r, http.StatusMethodNotAllowed, "method not allowed: the dashboard is read-only (GET)")
		return
	}
	if len(r.URL.RawQuery) > limits.DashboardMaxQueryBytes {
		d.refuse(w, r, http.StatusRequestURITooLong, "query too long")
		return
	}
	if !d.hostAllowed(r.Host, httpguard.LocalIP(r)) {
		d.refuse(w, r, http.StatusForbidden, "forbidden: Host not allowed")
		return
	}
	if !d.authorized(w, r) {
		return
	}
	switch r.URL.Path {
	case "/":
		d.write(w, indexHTML, "text/html; charset=utf-8")
	case "/app.js":
		d.asset(w, "assets/app.js", "text/javascript; charset=utf-8")
	case "/app.css":
		d.asset(w, "assets/app.css", "text/css; charset=utf-8")
	case "/favicon.svg":
		d.asset(w, "assets/favicon.svg", "image/svg+xml")
	case "/api/events":
		d.events(w, r)
	case "/api/stats":
		d.stats(w, r)
	case "/api/state":
		d.state(w, r)
	case "/api/live":
		d.stream(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (d *Dashboard) asset(w http.ResponseWriter, name, ctype string) {
	data, err := assets.ReadFile(name)
	if err != nil {
		http.Error(w, "missing asset", http.StatusInternalServerError)
		return
	}
	d.write(w, data, ctype)
}

func (d *Dashboard) write(w http.ResponseWriter, data []byte, ctype string) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.Write(data)
}

// authorized reports whether r may be answered, and answers it when not:
// 401 without the token, or a redirect that keeps a token given in the
// query as a cookie and drops it from the address.
func (d *Dashboard) authorized(w http.ResponseWriter, r *http.Request) bool {
	if d.opts.Token == "" {
		return true
	}
	q := r.URL.Query()
	if tok, given := q["token"]; given {
		if len(tok) != 1 || !d.digest.Equal(tok[0]) {
			d.unauthorized(w, r)
			return false
		}
		http.SetCookie(w, &http.Cookie{Name: CookieName, Value: d.cookie, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
			Secure: r.TLS != nil})
		q.Del("token")
		// Back to the same address on this server, never to a path a
		// browser would take for another host ("//host", "/\\host").
		path := r.URL.Path
		if !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "//") || strings.Contains(path, "\\") {
			path = "/"
		}
		u := url.URL{Path: path, RawQuery: q.Encode()}
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, u.String(), http.StatusSeeOther)
		return false
	}
	if b := httpguard.Bearer(r); b != "" && d.digest.Equal(b) {
		return true
	}
	if c, err := r.Cookie(CookieName); err == nil && hmac.Equal([]byte(c.Value), []byte(d.cookie)) {
		return true
	}
	d.unauthorized(w, r)
	return false
}

func (d *Dashboard) unauthorized(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="capkit dashboard"`)
	d.refuse(w, r, http.StatusUnauthorized, "unauthorized: open the address capkit printed (it carries ?token=), or send Authorization: Bearer TOKEN")
}

// refuse answers a request refused; the log gets the reason and the
// remote address, never the query.
func (d *Dashboard) refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d.log.Warn("dashboard: request refused", slog.Int("status", status), slog.String("reason", msg), slog.String("remote", r.RemoteAddr))
	http.Error(w, msg, status)
}

// hostAllowed reports whether a Host header names this server: a
// loopback name, the IP address the request arrived at, or one of
// Options.AllowedHosts; with the listener's port once Serve knows it.
func (d *Dashboard) hostAllowed(host string, local net.IP) bool {
	name, port, ok := httpguard.SplitHost(host)
	if !ok {
		return false
	}
	if httpguard.IsLoopbackHost(name) || httpguard.IsLocalIP(name, local) {
		want := d.port.Load()
		return want == 0 || port == strconv.Itoa(int(want)) || port == "" && want == 80
	}
	for _, a := range d.opts.AllowedHosts {
		an, ap, ok := httpguard.SplitHost(a)
		if ok && strings.EqualFold(an, name) && (ap == "" || ap == port) {
			return true
		}
	}
	return false
}
