package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

const canary = "CANARY-7f3a-never-shown"

// event is call i (testkit.CallRecord): three actors, four tools, a
// denial every 11th call, a limit every 11th after it, 7 s apart. Its
// JSON also carries the canary in a member the kernel never writes,
// which nothing may pass on.
func event(i int) *audit.Event {
	e := audit.Encode(testkit.CallRecord(i, 7*time.Second, [3]string{"alice", "bob", "carol"},
		slog.Int64("calls_left", int64(100-i)), slog.Group("shape", slog.String("path", "string:12")), slog.String("argument", canary)))
	if !strings.Contains(string(e.JSON), canary) {
		panic("the canary is not in the event")
	}
	return e
}

func recent(n int) *audit.Recent {
	r := audit.NewRecent(0)
	for i := range n {
		r.Sink().Write(event(i))
	}
	return r
}

func newDash(t *testing.T, src audit.Source, opts *Options) *Dashboard {
	t.Helper()
	d, err := New(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func get(t *testing.T, h http.Handler, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	req.Host = "127.0.0.1:8940"
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func decode[T any](t *testing.T, w *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("%v: %s", err, w.Body)
	}
	return v
}

// TestHeadersAndMethods: every answer carries the policy headers; only
// GET is served.
func TestHeadersAndMethods(t *testing.T) {
	d := newDash(t, recent(3), nil)
	for _, path := range []string{"/", "/app.js", "/app.css", "/favicon.svg", "/api/events", "/api/stats", "/api/state", "/nope"} {
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodHead, http.MethodOptions, http.MethodPatch} {
			w := get(t, d, m, path, nil)
			h := w.Result().Header
			if h.Get("Content-Security-Policy") != CSP || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
				t.Errorf("%s %s: headers %v", m, path, h)
			}
			want := http.StatusOK
			switch {
			case m != http.MethodGet:
				want = http.StatusMethodNotAllowed
			case path == "/nope":
				want = http.StatusNotFound
			}
			if w.Code != want {
				t.Errorf("%s %s: status %d, want %d", m, path, w.Code, want)
			}
		}
	}
	if !strings.Contains(CSP, "default-src 'none'") || !strings.Contains(CSP, "frame-ancestors 'none'") || strings.Contains(CSP, "unsafe") {
		t.Errorf("CSP %q", CSP)
	}
}

// TestNothingInline: the page has no inline script or style and names
// nothing outside the server, so the CSP holds it whole.
func TestNothingInline(t *testing.T) {
	page := get(t, newDash(t, recent(0), nil), http.MethodGet, "/", nil).Body.String()
	for _, bad := range []string{"<style", "style=", "onclick", "onload", "javascript:", "http://", "https://", "//cdn"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	if strings.Count(page, "<script") != 1 || !strings.Contains(page, `<script src="/app.js" defer></script>`) {
		t.Errorf("want exactly the one script, /app.js")
	}
	js, _ := assets.ReadFile("assets/app.js")
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "eval(", "new Function", "document.write", ".style"} {
		if strings.Contains(string(js), bad) {
			t.Errorf("app.js uses %s", bad)
		}
	}
}

// TestToken: with a token, a request needs it as a bearer or as the
// cookie a first navigation with ?token= set; that navigation is
// redirected to the address without the token.
func TestToken(t *testing.T) {
	const tok = "s3cret-token-0123456789"
	d := newDash(t, recent(2), &Options{Token: tok})
	cases := []struct {
		name   string
		target string
		hdr    map[string]string
		want   int
	}{
		{"none", "/", nil, http.StatusUnauthorized},
		{"api none", "/api/events", nil, http.StatusUnauthorized},
		{"wrong bearer", "/api/events", map[string]string{"Authorization": "Bearer nope-nope-nope-nope"}, http.StatusUnauthorized},
		{"prefix of the token", "/api/events", map[string]string{"Authorization": "Bearer " + tok[:len(tok)-1]}, http.StatusUnauthorized},
		{"bearer", "/api/events", map[string]string{"Authorization": "Bearer " + tok}, http.StatusOK},
		{"bearer any case", "/api/state", map[string]string{"Authorization": "bearer " + tok}, http.StatusOK},
		{"wrong query", "/?token=nope", nil, http.StatusUnauthorized},
		{"two tokens", "/?token=" + tok + "&token=" + tok, nil, http.StatusUnauthorized},
		{"token itself as cookie", "/", map[string]string{"Cookie": CookieName + "=" + tok}, http.StatusUnauthorized},
		{"wrong cookie", "/", map[string]string{"Cookie": CookieName + "=abc"}, http.StatusUnauthorized},
	}
	for _, c := range cases {
		if w := get(t, d, http.MethodGet, c.target, c.hdr); w.Code != c.want {
			t.Errorf("%s: status %d, want %d", c.name, w.Code, c.want)
		} else if c.want == http.StatusUnauthorized && !strings.HasPrefix(w.Result().Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: no WWW-Authenticate", c.name)
		}
	}
	w := get(t, d, http.MethodGet, "/?actor=alice&token="+tok+"&tool=grep", nil)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("?token=: status %d", w.Code)
	}
	loc := w.Result().Header.Get("Location")
	if strings.Contains(loc, tok) || strings.Contains(loc, "token") {
		t.Errorf("the redirect keeps the token: %s", loc)
	}
	if u, _ := url.Parse(loc); u.Path != "/" || u.Query().Get("actor") != "alice" || u.Query().Get("tool") != "grep" {
		t.Errorf("the redirect lost the selection: %s", loc)
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != CookieName || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Path != "/" {
		t.Fatalf("cookie %+v", cookies)
	}
	if strings.Contains(cookies[0].Value, tok) {
		t.Errorf("the cookie holds the token")
	}
	if w := get(t, d, http.MethodGet, loc, map[string]string{"Cookie": CookieName + "=" + cookies[0].Value}); w.Code != http.StatusOK {
		t.Errorf("with the cookie: status %d", w.Code)
	}
	for _, evil := range []string{"//evil.example/?token=" + tok, "/%5Cevil.example/?token=" + tok, "/%2F%2Fevil.example?token=" + tok} {
		w := get(t, d, http.MethodGet, evil, nil)
		if loc := w.Result().Header.Get("Location"); w.Code != http.StatusSeeOther || strings.Contains(loc, "evil") {
			t.Errorf("%s: %d to %q", evil, w.Code, loc)
		}
	}
	if _, err := New(recent(0), &Options{Token: "has space"}); fault.CodeOf(err) != fault.InvalidInput {
		t.Errorf("a token with a space: %v", err)
	}
}

// TestLoopbackOnly: without a token the dashboard refuses to serve on an
// address beyond loopback, and answers only Host headers naming it.
func TestLoopbackOnly(t *testing.T) {
	if err := CheckAddress("0.0.0.0:8940", false); !errors.Is(err, ErrNonLoopback) || fault.CodeOf(err) != fault.Denied {
		t.Errorf("CheckAddress 0.0.0.0 without a token: %v", err)
	}
	for _, a := range []string{"127.0.0.1:8940", "localhost:0", "[::1]:1"} {
		if err := CheckAddress(a, false); err != nil {
			t.Errorf("CheckAddress %s: %v", a, err)
		}
	}
	if err := CheckAddress("0.0.0.0:8940", true); err != nil {
		t.Errorf("CheckAddress 0.0.0.0 with a token: %v", err)
	}
	if err := CheckAddress("nonsense", false); fault.CodeOf(err) != fault.InvalidInput {
		t.Errorf("CheckAddress nonsense: %v", err)
	}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skip("cannot listen on every address:", err)
	}
	err = newDash(t, recent(0), nil).Serve(context.Background(), ln, nil)
	if !errors.Is(err, ErrNonLoopback) {
		t.Errorf("Serve on 0.0.0.0 without a token: %v", err)
	}
	d := newDash(t, recent(0), &Options{AllowedHosts: []string{"dash.internal"}})
	for host, want := range map[string]int{
		"127.0.0.1:8940": http.StatusOK, "localhost": http.StatusOK, "[::1]:80": http.StatusOK, "dash.internal:9": http.StatusOK,
		"evil.example": http.StatusForbidden, "127.0.0.1.nip.io": http.StatusForbidden, "": http.StatusForbidden,
	} {
		req := httptest.NewRequest(http.MethodGet, "/api/state", nil)
		req.Host = host
		w := httptest.NewRecorder()
		d.ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("Host %q: status %d, want %d", host, w.Code, want)
		}
	}
}

// TestFiltersServerSide: the table, the counts and the live stream show
// only what the filters select.
func TestFiltersServerSide(t *testing.T) {
	src := recent(200)
	d := newDash(t, src, nil)
	filters := []string{"", "actor=alice", "tool=grep", "outcome=denied", "outcome=error", "outcome=ok", "actor=bob&tool=glob&outcome=limit",
		"from=" + testkit.CallsStart.Add(100*time.Second).Format(time.RFC3339) + "&to=" + testkit.CallsStart.Add(700*time.Second).Format(time.RFC3339)}
	for _, q := range filters {
		v, _ := url.ParseQuery(q)
		f, err := ParseFilter(v)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for i := range 200 {
			if f.Matches(event(i)) {
				want++
			}
		}
		page := decode[EventsPage](t, get(t, d, http.MethodGet, "/api/events?limit=1000&"+q, nil))
		if len(page.Events) != want || want == 0 {
			t.Errorf("%q: %d rows, want %d (and some)", q, len(page.Events), want)
		}
		for i, r := range page.Events {
			e := &audit.Event{Time: r.Time, Msg: r.Msg, Actor: r.Actor, Tool: r.Tool, Outcome: r.Outcome}
			if !f.Matches(e) {
				t.Errorf("%q: row %+v does not match", q, r)
			}
			if i > 0 && r.Time.After(page.Events[i-1].Time) {
				t.Errorf("%q: rows not newest first", q)
			}
		}
		st := decode[audit.Stats](t, get(t, d, http.MethodGet, "/api/stats?"+q, nil))
		if st.Calls != int64(want) {
			t.Errorf("%q: stats count %d calls, want %d", q, st.Calls, want)
		}
	}
	for _, q := range []string{"outcome=nonsense", "from=yesterday", "to=2026-13-01T00:00:00Z", "limit=0", "limit=x", "cursor=zz"} {
		w := get(t, d, http.MethodGet, "/api/events?"+q, nil)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `"code":"invalid_input"`) {
			t.Errorf("%q: status %d %s", q, w.Code, w.Body)
		}
	}
	if w := get(t, d, http.MethodGet, "/api/stats?outcome=Bad", nil); w.Code != http.StatusBadRequest {
		t.Errorf("stats with a bad filter: %d", w.Code)
	}
}

// TestDenialsCarryTheirPolicy: a denial's and a limit's rows say the
// policy that decided them and the calls left.
func TestDenialsCarryTheirPolicy(t *testing.T) {
	page := decode[EventsPage](t, get(t, newDash(t, recent(20), nil), http.MethodGet, "/api/events?outcome=denied", nil))
	if len(page.Events) == 0 {
		t.Fatal("no denial")
	}
	for _, r := range page.Events {
		if r.Policy != "grant:write_file" || r.CallsLeft == nil {
			t.Errorf("denial row %+v", r)
		}
	}
}

// TestPagesAtTheirBounds: limit runs from 1 to DashboardMaxRows; pages
// go on by cursor through every event, newest first, once each.
func TestPagesAtTheirBounds(t *testing.T) {
	n := limits.DashboardMaxRows + 7
	d := newDash(t, recent(n), nil)
	if w := get(t, d, http.MethodGet, fmt.Sprintf("/api/events?limit=%d", limits.DashboardMaxRows+1), nil); w.Code != http.StatusBadRequest {
		t.Errorf("limit past the bound: %d", w.Code)
	}
	if p := decode[EventsPage](t, get(t, d, http.MethodGet, "/api/events", nil)); len(p.Events) != limits.DashboardDefaultRows || p.Next == "" {
		t.Errorf("default page: %d rows, next %q", len(p.Events), p.Next)
	}
	p := decode[EventsPage](t, get(t, d, http.MethodGet, fmt.Sprintf("/api/events?limit=%d", limits.DashboardMaxRows), nil))
	if len(p.Events) != limits.DashboardMaxRows || p.Next == "" || p.Events[0].Request != fmt.Sprint(n-1) {
		t.Fatalf("a full page: %d rows, next %q", len(p.Events), p.Next)
	}
	rest := decode[EventsPage](t, get(t, d, http.MethodGet, "/api/events?limit=1000&cursor="+p.Next, nil))
	if len(rest.Events) != 7 || rest.Next != "" || rest.Events[0].Request != "6" || rest.Events[6].Request != "0" {
		t.Errorf("the last page: %d rows, next %q", len(rest.Events), rest.Next)
	}
	one := decode[EventsPage](t, get(t, d, http.MethodGet, "/api/events?limit=1", nil))
	if len(one.Events) != 1 || one.Next == "" {
		t.Errorf("limit=1: %d rows", len(one.Events))
	}
}

// TestNoArgumentValue: nothing the API answers holds what an event holds
// besides its counted members (here a canary where a value could be).
func TestNoArgumentValue(t *testing.T) {
	src := recent(50)
	d := newDash(t, src, nil)
	for _, target := range []string{"/", "/app.js", "/api/events?limit=1000", "/api/stats", "/api/state", "/api/events?actor=alice"} {
		if body := get(t, d, http.MethodGet, target, nil).Body.String(); strings.Contains(body, canary) || strings.Contains(body, "string:12") {
			t.Errorf("%s shows what an event holds besides its members", target)
		}
	}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	msgs := live(t, srv.URL+"/api/live?after=0")
	if m := <-msgs; len(m.Events) == 0 || strings.Contains(fmt.Sprint(m), canary) {
		t.Errorf("live: %+v", m)
	}
}

// live reads a live stream's messages until the test ends.
func live(t *testing.T, u string) <-chan LiveMessage {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("live: %d %s", resp.StatusCode, b)
	}
	out := make(chan LiveMessage, 100)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m LiveMessage
			if json.Unmarshal([]byte(data), &m) == nil {
				out <- m
			}
		}
		close(out)
	}()
	return out
}

// liveRequests reads msgs until they held at least n rows and returns
// the rows' requests, sorted and comma-separated; a row whose member
// which picks is not want fails the test.
func liveRequests(t *testing.T, msgs <-chan LiveMessage, n int, which func(Row) string, want string) string {
	t.Helper()
	var got []string
	for len(got) < n {
		m, ok := <-msgs
		if !ok {
			t.Fatal("the stream ended")
		}
		for _, r := range m.Events {
			if which(r) != want {
				t.Errorf("live sent %s, want only %s", which(r), want)
			}
			got = append(got, r.Request)
		}
	}
	slices.Sort(got)
	return strings.Join(got, ",")
}

// TestLiveDeliversNewEvents: an event written after the stream opened
// arrives on it, filtered, newest first; what is waiting is sent at most
// DashboardLiveRows a message.
func TestLiveDeliversNewEvents(t *testing.T) {
	src := recent(10)
	srv := httptest.NewServer(newDash(t, src, nil))
	t.Cleanup(srv.Close)
	msgs := live(t, srv.URL+"/api/live?tool=grep")
	for i := 10; i < 30; i++ {
		src.Sink().Write(event(i))
	}
	if got := liveRequests(t, msgs, 5, func(r Row) string { return r.Tool }, "grep"); got != "13,17,21,25,29" {
		t.Errorf("live sent %v, want the grep calls after it opened: 13,17,21,25,29", got)
	}

	n := limits.DashboardLiveRows + 5
	big := recent(n)
	srv2 := httptest.NewServer(newDash(t, big, nil))
	t.Cleanup(srv2.Close)
	msgs = live(t, srv2.URL+"/api/live?after=0")
	first, second := <-msgs, <-msgs
	if len(first.Events) != limits.DashboardLiveRows || len(second.Events) != 5 {
		t.Errorf("messages of %d and %d events, want %d and 5", len(first.Events), len(second.Events), limits.DashboardLiveRows)
	}
	if first.Events[0].Request != fmt.Sprint(limits.DashboardLiveRows-1) || first.Events[len(first.Events)-1].Request != "0" {
		t.Errorf("the first message is not newest first: %s..%s", first.Events[0].Request, first.Events[len(first.Events)-1].Request)
	}
}

// TestLiveClientsBound: DashboardLiveClients streams at once; one more is
// refused until one closes.
func TestLiveClientsBound(t *testing.T) {
	srv := httptest.NewServer(newDash(t, recent(1), nil))
	defer srv.Close()
	var cancels []context.CancelFunc
	for range limits.DashboardLiveClients {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/live", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: %v %v", err, resp)
		}
		defer resp.Body.Close()
	}
	resp, err := http.Get(srv.URL + "/api/live")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("one stream past the bound: %v %v", err, resp.StatusCode)
	}
	resp.Body.Close()
	cancels[0]()
	for {
		resp, err := http.Get(srv.URL + "/api/live?after=1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		time.Sleep(10 * time.Millisecond) // the closed stream's handler ends
	}
	for _, c := range cancels {
		c()
	}
}

// TestQueryBound: a query of limits.DashboardMaxQueryBytes is answered,
// one byte more is refused.
func TestQueryBound(t *testing.T) {
	d := newDash(t, recent(3), nil)
	prefix := "actor="
	at := prefix + strings.Repeat("a", limits.DashboardMaxQueryBytes-len(prefix))
	if w := get(t, d, http.MethodGet, "/api/events?"+at, nil); w.Code != http.StatusOK {
		t.Errorf("a query of %d bytes: %d", len(at), w.Code)
	}
	if w := get(t, d, http.MethodGet, "/api/events?"+at+"a", nil); w.Code != http.StatusRequestURITooLong {
		t.Errorf("a query of %d bytes: %d", len(at)+1, w.Code)
	}
}

// slowStats is a source whose counts wait to be released.
type slowStats struct {
	*audit.Recent
	in      chan struct{}
	release chan struct{}
}

func (s *slowStats) Stats(ctx context.Context, f audit.Filter) (*audit.Stats, error) {
	s.in <- struct{}{}
	<-s.release
	return s.Recent.Stats(ctx, f)
}

// TestStatsAtOnce: DashboardStatsAtOnce counts are computed at once; one
// more waits for a turn, and gets it once one ends.
func TestStatsAtOnce(t *testing.T) {
	src := &slowStats{Recent: recent(5), in: make(chan struct{}, 10), release: make(chan struct{})}
	d := newDash(t, src, nil)
	done := make(chan int, limits.DashboardStatsAtOnce+1)
	for range limits.DashboardStatsAtOnce + 1 {
		go func() { done <- get(t, d, http.MethodGet, "/api/stats", nil).Code }()
	}
	for range limits.DashboardStatsAtOnce {
		<-src.in
	}
	select {
	case <-src.in:
		t.Fatalf("more than %d counts at once", limits.DashboardStatsAtOnce)
	case <-time.After(100 * time.Millisecond): // the extra one is waiting, not counting
	}
	src.release <- struct{}{}
	<-src.in // the waiting one got its turn
	close(src.release)
	for range limits.DashboardStatsAtOnce + 1 {
		if code := <-done; code != http.StatusOK {
			t.Errorf("status %d", code)
		}
	}
}

// TestPageBoundsAndChainHint: the page carries the chart's bound from
// limits, and /api/state the in-memory source's count and where its
// chained trail is.
func TestPageBoundsAndChainHint(t *testing.T) {
	const hint = "the chained trail is /var/log/capkit/audit.jsonl"
	d := newDash(t, recent(34), &Options{ChainHint: hint})
	page := get(t, d, http.MethodGet, "/", nil).Body.String()
	if want := fmt.Sprintf(`data-max-tools="%d"`, limits.DashboardChartTools); !strings.Contains(page, want) || strings.Contains(page, "{{") {
		t.Errorf("the page lacks %s or keeps a placeholder", want)
	}
	st := decode[State](t, get(t, d, http.MethodGet, "/api/state", nil))
	if st.Chain.Total != 34 || st.Chain.Streams != 0 || st.ChainHint != hint {
		t.Errorf("state: %d events, %d streams, hint %q", st.Chain.Total, st.Chain.Streams, st.ChainHint)
	}
}
