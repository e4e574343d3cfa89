package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/internal/testkit/otlptest"
	"github.com/capkit/capkit/internal/testkit/pgtest"
	"github.com/capkit/capkit/limits"
)

// The browser half of the audit page's e2e tests (dashboard_test.go has
// its HTTP half).

// The lines capkit prints on stderr when it serves: the MCP endpoint and
// the audit page.
var (
	mcpLine       = regexp.MustCompile(`serving MCP on (http://\S+)`)
	dashboardLine = regexp.MustCompile(`dashboard on (http://\S+)`)
)

// dashWorld is one `capkit serve --http --dashboard` with every audit
// sink on (the trail file, a PostgreSQL store, OpenTelemetry to a
// collector of the test's own), two actors with a token each, and a
// token for the page.
type dashWorld struct {
	dir, trail, spool   string
	store               string // the PostgreSQL URL
	col                 *otlptest.Collector
	mcp, page           string // the endpoints
	token               string // the page's
	assistant, reviewer string // the actors' tokens
	canary              string // in argument values only
	server              *proc
}

func newDashWorld(t *testing.T) *dashWorld {
	t.Helper()
	w := &dashWorld{dir: tree(t), store: pgtest.URL(t), col: otlptest.Start(t),
		token: "e2e-dashboard-token-" + randomHex(t), assistant: "e2e-assistant-token-" + randomHex(t),
		reviewer: "e2e-reviewer-token-" + randomHex(t), canary: "CANARY" + randomHex(t)}
	w.trail, w.spool = filepath.Join(w.dir, "logs", "audit.jsonl"), filepath.Join(w.dir, "spool")
	for _, d := range []string{"secrets", "logs"} {
		if err := os.Mkdir(filepath.Join(w.dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for name, tok := range map[string]string{"page": w.token, "assistant": w.assistant, "reviewer": w.reviewer} {
		writePrivate(t, filepath.Join(w.dir, "secrets", name), tok+"\n")
	}
	// A [net] budget: the page shows its use.
	writePrivate(t, filepath.Join(w.dir, "http.json"), `{"format": 1}`)
	writePrivate(t, filepath.Join(w.dir, "budget.json"), `{"format": 1, "group": "g", "window_seconds": 60, "window_requests": 5, "window_bytes": 1000}`)
	cfg := filepath.Join(w.dir, "capkit.toml")
	writePrivate(t, cfg, fmt.Sprintf(`audit_log = "logs/audit.jsonl"
audit_store = %q
audit_spool = %q
[[root]]
path = "rw"
[[root]]
path = "ro"
read_only = true

[actor.assistant]

[actor.reviewer]
roots = ["ro"]
effects = ["read_file", "list"]

[tool.list_dir]
max_calls = 3

[http]
tokens = { assistant = "secrets/assistant", reviewer = "secrets/reviewer" }

[telemetry]
otlp_endpoint = %q

[net]
http_policy = "http.json"
budget_policy = "budget.json"
budget_root = "budget"
`, w.store, w.spool, w.col.URL()))
	found, server := startCapkit(t, []string{"serve", "--config", cfg, "--http", "127.0.0.1:0",
		"--dashboard", "127.0.0.1:0", "--dashboard-token-file", filepath.Join(w.dir, "secrets", "page")}, mcpLine, dashboardLine)
	w.mcp, w.page, w.server = found[mcpLine], found[dashboardLine], server
	return w
}

// client connects an actor over the Go SDK's client, listing its tools
// first as a model's client does.
func (w *dashWorld) client(t *testing.T, token string) *client {
	t.Helper()
	c := connect(t, &mcp.StreamableClientTransport{Endpoint: w.mcp, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1})
	c.tools(t)
	return c
}

// signIn opens a tab and signs it in to the page, as a link with the
// token does: the first navigation sets the cookie and drops the token
// from the address.
func (w *dashWorld) signIn(t *testing.T) *tab {
	t.Helper()
	tb := openTab(t)
	if status := tb.navigate(t, w.page+"?token="+url.QueryEscape(w.token)); status != http.StatusOK {
		t.Fatalf("signing in: status %d", status)
	}
	if loc := eval[string](t, tb, `location.href`); strings.Contains(loc, w.token) {
		t.Fatalf("the token stays in the address: %s", loc)
	}
	waitReady(t, tb)
	return tb
}

// waitReady waits for the page's first rows.
func waitReady(t testing.TB, tb *tab) {
	t.Helper()
	waitFor[bool](t, tb, `document.body.dataset.ready === "1"`)
}

// TestDashboard: the audit page of a server in use, in headless
// Chromium. It loads with no console error and no CSP violation; calls
// made over MCP appear while it is open; a denial is a row of its own
// with the policy that decided it; a filter in the address survives a
// reload and the browser's back and forward; a request without the
// token is refused; and no argument value sent in the calls appears in
// the page, anything it received, the trail, the store or the spans.
func TestDashboard(t *testing.T) {
	w := newDashWorld(t)

	t.Run("refused without the token", func(t *testing.T) {
		for _, path := range []string{"", "api/events", "api/stats", "api/state", "api/live", "app.js"} {
			for _, tok := range []string{"", w.token + "x"} {
				req, _ := http.NewRequest(http.MethodGet, w.page+path, nil)
				if tok != "" {
					req.Header.Set("Authorization", "Bearer "+tok)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized || bytes.Contains(data, []byte("events")) {
					t.Errorf("/%s with token %q: status %d, %d bytes", path, tok, resp.StatusCode, len(data))
				}
			}
		}
		req, _ := http.NewRequest(http.MethodGet, w.page, nil)
		req.Header.Set("Authorization", "Bearer "+w.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != http.StatusOK || !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe-") {
			t.Errorf("with the bearer token: status %d, Content-Security-Policy %q", resp.StatusCode, csp)
		}
		tb := openTab(t)
		if status := tb.navigate(t, w.page); status != http.StatusUnauthorized {
			t.Fatalf("the browser without the token: status %d, want 401", status)
		}
	})

	tb := w.signIn(t)
	assistant := w.client(t, w.assistant)

	t.Run("calls appear live", func(t *testing.T) {
		waitFor[bool](t, tb, `document.body.dataset.live === "1"`)
		var lags []time.Duration
		for i := range 5 {
			before := eval[int](t, tb, `document.querySelectorAll('table#events tr.event[data-tool="read_file"]').length`)
			_, code := assistant.call(t, "read_file", map[string]any{"path": "notes.txt"})
			want(t, "read_file", code, "")
			returned := time.Now()
			shown := waitFor[float64](t, tb, fmt.Sprintf(`document.querySelectorAll('table#events tr.event[data-tool="read_file"]').length > %d && Date.now()`, before))
			lag := time.UnixMilli(int64(shown)).Sub(returned)
			lags = append(lags, lag)
			t.Logf("call %d: its row was shown %v after the call returned", i+1, lag)
		}
		slices.Sort(lags)
		t.Logf("live: the median call was shown %v after it returned (of %v; load %s)", lags[len(lags)/2], lags, loadAverage())
	})

	w.traffic(t, assistant)

	t.Run("a denial shows its policy", func(t *testing.T) {
		out := runTS(t, nodeModules(t), tsPlan{Transport: "http", URL: w.mcp, Headers: map[string]string{"Authorization": "Bearer " + w.reviewer},
			Steps: []tsStep{{Op: "list"}, {Op: "call", Tool: "write_file", Args: map[string]any{
				"path": filepath.Join(w.dir, "rw", w.canary+"-by-reviewer.txt"), "content": w.canary}}}})
		if res := out.Results[1]; !res.IsError {
			t.Fatalf("the reviewer's write_file: %+v", res)
		}
		policy := waitFor[string](t, tb, `(() => {
			const row = document.querySelector('table#events tr.event.denial[data-actor="reviewer"][data-tool="write_file"][data-outcome="denied"]');
			return row && row.querySelector("td.policy").textContent.trim();
		})()`)
		if policy != "grant:write_file" {
			t.Fatalf("the denial's policy cell: %q", policy)
		}
		left := waitFor[string](t, tb, `(() => {
			const row = document.querySelector('table#events tr.event.limit[data-actor="assistant"][data-tool="list_dir"]');
			return row && (row.querySelector("td.policy").textContent.trim() + " left " + row.querySelector("td.left").textContent.trim());
		})()`)
		if left != "max_calls=3 left 0" {
			t.Fatalf("the limit row: %q", left)
		}
		// The counts follow the rows.
		waitFor[bool](t, tb, `!!document.querySelector('#actors tr[data-actor="reviewer"]')`)
	})

	t.Run("the chain box and budgets", func(t *testing.T) {
		// The count follows the calls (the state is read again after live
		// rows), and the box says where the chained trail is.
		chain := waitFor[string](t, tb, `(() => {
			const c = document.querySelector("#chain"), n = document.querySelectorAll("table#events tr.event").length;
			const m = /^in memory, not chained: (\d+) events; /.exec(c.textContent);
			return c.dataset.state === "unchained" && m && Number(m[1]) >= n && n > 30 && c.textContent;
		})()`)
		if !strings.Contains(chain, "the chained trail is "+w.trail+": read it with capkit dashboard --audit "+w.trail) {
			t.Errorf("the chain box: %q", chain)
		}
		budget := waitFor[string](t, tb, `(() => {
			const r = [...document.querySelectorAll('#budgets tr[data-group="g"]')].map(r => r.dataset.unit + ":" +
				[...r.querySelectorAll("td")].slice(2, 5).map(td => td.textContent).join("/"));
			return r.length === 2 && r.join(" ");
		})()`)
		if budget != "requests:0/5/5 bytes:0/1000/1000" {
			t.Errorf("the budget rows (unit:used/limit/left): %q", budget)
		}
		tb.screenshot(t, "dashboard-overview", 1300)
	})

	t.Run("a filter in the address survives reload and history", func(t *testing.T) {
		ft := w.signIn(t)
		denied := w.page + "?actor=reviewer&outcome=denied"
		check := func(step, actor, tool, outcome string) {
			t.Helper()
			// "" while the page is not yet what the filter says.
			state := fmt.Sprintf(`(() => {
				const q = new URLSearchParams(location.search), f = document.querySelector("form#filters");
				const want = {actor: %q, tool: %q, outcome: %q};
				for (const k in want) {
					if ((q.get(k) || "") !== want[k]) return "the address has " + k + "=" + q.get(k);
					if (f.elements[k].value !== want[k]) return "the form has " + k + "=" + f.elements[k].value;
				}
				if (document.body.dataset.ready !== "1") return "not ready";
				const rows = [...document.querySelectorAll("table#events tr.event")];
				const off = rows.filter(r => (want.actor && r.dataset.actor !== want.actor) || (want.tool && r.dataset.tool !== want.tool) ||
					(want.outcome && r.dataset.outcome !== want.outcome));
				if (rows.length === 0 || off.length) return rows.length + " rows, " + off.length + " off the filter";
				return "ok " + rows.length;
			})()`, actor, tool, outcome)
			got, err := poll[string](ft, `(s => s.startsWith("ok ") && s)(`+state+`)`)
			if err != nil {
				t.Fatalf("%s: %v; the page: %s", step, err, eval[string](t, ft, state))
			}
			t.Logf("%s: %s rows", step, strings.TrimPrefix(got, "ok "))
		}
		ft.navigate(t, w.page+"?outcome=denied")
		check("every denial", "", "", "denied")
		ft.screenshot(t, "dashboard-denials", 0)
		ft.navigate(t, denied)
		check("navigated", "reviewer", "", "denied")
		ft.do(t, chromedp.Reload())
		check("reloaded", "reviewer", "", "denied")

		// Set from the form: the address follows. Submitted through its
		// button in the page, not a click at coordinates: the header
		// can grow (the chain box's text arrives) between where a click
		// is aimed and where it lands.
		eval[bool](t, ft, `(() => {
			const f = document.querySelector("form#filters");
			f.elements.actor.value = f.elements.outcome.value = "";
			f.elements.tool.value = "read_file";
			f.requestSubmit(f.querySelector('[type="submit"]'));
			return true;
		})()`)
		check("set in the form", "", "read_file", "")
		ft.do(t, chromedp.NavigateBack())
		check("back", "reviewer", "", "denied")
		ft.do(t, chromedp.NavigateForward())
		check("forward", "", "read_file", "")
		ft.do(t, chromedp.Reload())
		check("reloaded again", "", "read_file", "")
		ft.noProblems(t)
	})

	t.Run("charts", func(t *testing.T) {
		bars := waitFor[int](t, tb, `document.querySelectorAll("svg#calls-chart rect.calls").length`)
		lat := waitFor[int](t, tb, `document.querySelectorAll("svg#latency-chart rect.p99").length`)
		if lat != 6 {
			t.Errorf("%d p99 bars in the latency chart, want one for each of the 6 tools called", lat)
		}
		t.Logf("%d call bars, %d p99 bars", bars, lat)
	})

	// Judged before the canary step stops the server: the page's event
	// stream then fails to reconnect, which is no defect of the page.
	tb.noProblems(t)
	t.Run("no argument value anywhere", func(t *testing.T) {
		w.noCanary(t, tb)
	})
}

// traffic makes the calls the page then shows: the file tools with each
// outcome they have, the canary in paths, contents and patterns, and
// list_dir past its budget.
func (w *dashWorld) traffic(t *testing.T, c *client) {
	t.Helper()
	name := w.canary + ".txt"
	calls := []struct {
		tool string
		args map[string]any
		code string
	}{
		{"write_file", map[string]any{"path": name, "content": "the canary " + w.canary + "\n"}, ""},
		{"read_file", map[string]any{"path": name}, ""},
		{"edit_file", map[string]any{"path": name, "old_string": w.canary, "new_string": w.canary + "-edited"}, ""},
		{"read_file", map[string]any{"path": "missing-" + name}, "not_found"},
		{"grep", map[string]any{"pattern": w.canary, "path": "."}, ""},
		{"glob", map[string]any{"pattern": "*" + w.canary + "*"}, ""},
		{"write_file", map[string]any{"path": filepath.Join(w.dir, "ro", name), "content": w.canary}, "denied"},
		{"read_file", map[string]any{"path": filepath.Join(w.dir, "outside", "secret.md")}, "denied"},
		{"list_dir", map[string]any{"path": "."}, ""},
		{"list_dir", map[string]any{"path": "."}, ""},
		{"list_dir", map[string]any{"path": "."}, ""},
		{"list_dir", map[string]any{"path": w.canary}, "limit"},
	}
	// Once with list_dir past its budget, twice more without it.
	for round := range 3 {
		for _, cl := range calls {
			if cl.tool == "list_dir" && round > 0 {
				continue
			}
			_, code := c.call(t, cl.tool, cl.args)
			want(t, cl.tool, code, cl.code)
		}
	}
}

// noCanary checks that the canary sent in argument values is nowhere:
// not in the page's DOM or text, in any response or server-sent event
// the tabs received, in the trail, the spool, the PostgreSQL store, or
// the telemetry exported; and that each of them holds the calls, so that
// its absence there means something.
func (w *dashWorld) noCanary(t *testing.T, tb *tab) {
	t.Helper()
	canary := []byte(w.canary)
	html := eval[string](t, tb, `document.documentElement.outerHTML + "\n" + document.body.innerText`)
	if !strings.Contains(html, "write_file") || strings.Contains(html, w.canary) {
		t.Errorf("the page: holds write_file %v, holds the canary %v", strings.Contains(html, "write_file"), strings.Contains(html, w.canary))
	}
	var responses int
	for _, b := range tb.received() {
		if b.err != nil {
			t.Logf("a body not read (%s): %v", b.url, b.err)
			continue
		}
		responses++
		if bytes.Contains(b.data, canary) {
			t.Errorf("the response of %s holds the canary", b.url)
		}
	}
	t.Logf("%d responses and server-sent events read, none holding the canary", responses)
	if responses == 0 {
		t.Error("no response body was read")
	}

	trail := readFile(t, w.trail)
	if !strings.Contains(trail, `"write_file"`) || strings.Contains(trail, w.canary) {
		t.Errorf("the trail: holds write_file %v, holds the canary %v", strings.Contains(trail, `"write_file"`), strings.Contains(trail, w.canary))
	}
	spooled, _ := filepath.Glob(filepath.Join(w.spool, "*"))
	for _, p := range spooled {
		if bytes.Contains([]byte(readFile(t, p)), canary) {
			t.Errorf("the spool %s holds the canary", p)
		}
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, w.store)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows, leaks int
	deadline := time.Now().Add(hangGuard)
	for {
		err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE tool = 'write_file'), count(*) FILTER (WHERE a::text LIKE '%' || $1 || '%') FROM capkit_audit a`, w.canary).Scan(&rows, &leaks)
		if err != nil {
			t.Fatal(err)
		}
		if rows >= 7 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rows < 7 || leaks != 0 {
		t.Errorf("the store: %d write_file rows (want at least 7), %d rows holding the canary", rows, leaks)
	}

	// The exporter sends what is pending when the server exits.
	if err := w.server.stop(syscall.SIGTERM); err != nil {
		t.Errorf("the server's exit: %v", err)
	}
	var spans int
	for _, sp := range w.col.Spans() {
		if otlptest.Attrs(sp.Attributes)["mcp.tool.name"] == "write_file" {
			spans++
		}
	}
	if spans < 7 {
		t.Errorf("%d write_file spans exported, want at least 7", spans)
	}
	for _, b := range w.col.Bodies() {
		if bytes.Contains(b, canary) {
			t.Fatal("an OTLP export holds the canary")
		}
	}
}

// proc is a capkit process a test started.
type proc struct {
	cmd   *exec.Cmd
	ended chan struct{} // its stderr is read to the end
}

// stop signals the process and waits for it to exit.
func (p *proc) stop(sig os.Signal) error {
	p.cmd.Process.Signal(sig)
	select {
	case <-p.ended:
	case <-time.After(hangGuard):
	}
	return p.cmd.Wait()
}

// startCapkit runs capkit with args until the test ends and returns, for
// each of lines, the address it printed on stderr.
func startCapkit(t testing.TB, args []string, lines ...*regexp.Regexp) (map[*regexp.Regexp]string, *proc) {
	t.Helper()
	p := &proc{cmd: exec.Command(capkit, args...), ended: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stop(os.Kill) })
	type hit struct {
		re  *regexp.Regexp
		url string
	}
	hits := make(chan hit, len(lines))
	go func() {
		defer close(p.ended)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			for _, re := range lines {
				if m := re.FindStringSubmatch(sc.Text()); m != nil {
					hits <- hit{re, m[1]}
				}
			}
			t.Log("capkit: " + sc.Text())
		}
	}()
	found := map[*regexp.Regexp]string{}
	timeout := time.After(hangGuard)
	for len(found) < len(lines) {
		select {
		case h := <-hits:
			found[h.re] = h.url
		case <-p.ended:
			if len(hits) == 0 {
				t.Fatalf("capkit %s exited before it said where it serves", strings.Join(args, " "))
			}
		case <-timeout:
			t.Fatalf("capkit %s did not say where it serves", strings.Join(args, " "))
		}
	}
	return found, p
}

func randomHex(t testing.TB) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// loadAverage is the machine's one-minute load, for timings logged.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

// TestDashboardTrail: `capkit dashboard --audit` over a day's trail,
// with a token: the page counts every call, shows the chain verified,
// draws the calls over time and the latencies, with no console error;
// over the same trail with one line edited, it shows the chain broken.
func TestDashboardTrail(t *testing.T) {
	chromium(t)
	dir := t.TempDir()
	const n = 20_000
	good, edited := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "edited.jsonl")
	writeTrail(t, good, n, 24*time.Hour)
	lines := strings.SplitAfter(readFile(t, good), "\n")
	lines[n/2] = strings.Replace(lines[n/2], `"actor":"`, `"actor":"x`, 1)
	writePrivate(t, edited, strings.Join(lines, ""))
	token := "e2e-dashboard-token-" + randomHex(t)
	tokenFile := filepath.Join(dir, "token")
	writePrivate(t, tokenFile, token+"\n")

	for _, c := range []struct {
		trail, chain string
	}{{good, "ok"}, {edited, "broken"}} {
		page := startDashboard(t, "dashboard", "--audit", c.trail, "--listen", "127.0.0.1:0", "--token-file", tokenFile)
		// The counts are those of what the reader has read when the page
		// loads.
		waitIndexed(t, page, token, n)
		w := &dashWorld{page: page, token: token}
		tb := w.signIn(t)
		state := waitFor[string](t, tb, `(s => s !== "" && s !== "unchained" && s)(document.querySelector("#chain")?.dataset.state ?? "")`)
		if state != c.chain {
			t.Errorf("%s: the chain is shown %q, want %q: %s", c.trail, state, c.chain, eval[string](t, tb, `document.querySelector("#chain").textContent`))
		}
		if c.chain != "ok" {
			tb.noProblems(t)
			continue
		}
		calls := waitFor[int](t, tb, fmt.Sprintf(`(n => n === %d && n)(Number(document.querySelector("#totals b")?.textContent.replaceAll(",", "")))`, n))
		bars := waitFor[int](t, tb, `document.querySelectorAll("svg#calls-chart rect.calls").length > 10 && document.querySelectorAll("svg#calls-chart rect.calls").length`)
		tools := waitFor[int](t, tb, `document.querySelectorAll("svg#latency-chart rect.p99").length`)
		t.Logf("%d calls counted, %d bars of calls over time, latencies of %d tools", calls, bars, tools)
		if tools != 12 {
			t.Errorf("the latency chart has %d tools, want 12", tools)
		}
		latencyChartShowsAll(t, tb)
		tb.screenshotOf(t, "dashboard-charts", `(() => {
			let a = document.querySelector("svg#calls-chart");
			const b = document.querySelector("svg#latency-chart");
			while (!a.contains(b)) a = a.parentElement;
			return a;
		})()`)
		latencyChartBound(t, tb)
		partialCounts(t, tb, n)
		tb.noProblems(t)
	}
}

// chartRows is what latencyChartShowsAll and latencyChartBound read of
// the latency chart: the tools whose bars lie outside the picture, the
// narrowest p50 bar over the widest p99 bar, the axis' labels, the bars
// and the note on the tools not drawn.
const chartRows = `(() => {
	const s = document.querySelector("svg#latency-chart"), box = s.getBoundingClientRect();
	const p99 = [...s.querySelectorAll("rect.p99")], p50 = [...s.querySelectorAll("rect.p50")];
	const cut = p99.filter(r => { const b = r.getBoundingClientRect(); return b.bottom > box.bottom + 0.5 || b.top < box.top - 0.5; }).map(r => r.dataset.tool);
	const w = r => r.getBBox().width;
	return JSON.stringify({cut, ratio: Math.min(...p50.map(w)) / Math.max(...p99.map(w)), ticks: [...s.querySelectorAll("text.tick")].map(t => t.textContent),
		drawn: p99.length, bound: Number(s.dataset.maxTools), more: s.querySelector("text.more")?.textContent ?? ""});
})()`

type chartState struct {
	Cut   []string `json:"cut"`
	Ratio float64  `json:"ratio"`
	Ticks []string `json:"ticks"`
	Drawn int      `json:"drawn"`
	Bound int      `json:"bound"`
	More  string   `json:"more"`
}

func readChart(t *testing.T, tb *tab) chartState {
	t.Helper()
	var c chartState
	if err := json.Unmarshal([]byte(eval[string](t, tb, chartRows)), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// latencyChartShowsAll: every tool's bars lie inside the chart, and on
// its log scale the fastest tool's p50 (about 250 µs) is a bar to see
// beside the slowest's p99 (seconds), on an axis labelled in µs, ms, s.
func latencyChartShowsAll(t *testing.T, tb *tab) {
	t.Helper()
	c := readChart(t, tb)
	if len(c.Cut) != 0 || c.More != "" {
		t.Errorf("the latency chart cuts off %v of its %d tools (%q)", c.Cut, c.Drawn, c.More)
	}
	if c.Ratio < 0.2 {
		t.Errorf("the narrowest p50 bar is %.4f of the widest p99 bar: not a log scale", c.Ratio)
	}
	for _, tick := range []string{"1 µs", "1 ms", "1 s"} {
		if !slices.Contains(c.Ticks, tick) {
			t.Errorf("the latency axis' labels %q lack %q", c.Ticks, tick)
		}
	}
}

// latencyChartBound: given three tools more than limits.DashboardChartTools,
// the chart draws the bound, all inside it, and says 3 more are not drawn.
func latencyChartBound(t *testing.T, tb *tab) {
	t.Helper()
	eval[bool](t, tb, `(() => {
		const bound = Number(document.querySelector("svg#latency-chart").dataset.maxTools);
		latencyChart(Array.from({length: bound + 3}, (_, i) => ({name: "tool" + i, p50_us: 10 * (i + 1), p95_us: 20 * (i + 1), p99_us: 3000 * (i + 1)})));
		return true;
	})()`)
	c := readChart(t, tb)
	if c.Bound != limits.DashboardChartTools || c.Drawn != c.Bound || len(c.Cut) != 0 || !strings.HasPrefix(c.More, "3 more tools not drawn") {
		t.Errorf("over %d tools: bound %d (want %d), %d drawn, %v cut off, note %q", limits.DashboardChartTools+3, c.Bound, limits.DashboardChartTools, c.Drawn, c.Cut, c.More)
	}
	eval[bool](t, tb, `(refreshStats(state.generation), true)`)
}

// partialCounts: while the chain state says the trail is still being
// indexed, the page says its counts are partial, with what was read;
// once it no longer says so, the note goes and the counts are read again
// at once. The state is the server's, made partial for one answer.
func partialCounts(t *testing.T, tb *tab, n int) {
	t.Helper()
	got := eval[string](t, tb, `(async () => {
		const real = getJSON, note = document.querySelector("#partial");
		let stats = 0, states = 0;
		getJSON = async (p) => {
			if (p.startsWith("/api/stats")) stats++;
			const v = await real(p);
			if (p === "/api/state" && states++ === 0) Object.assign(v.chain, {partial: true, total: 5, read_bytes: 1024, size_bytes: 4096});
			return v;
		};
		try {
			await refreshState();
			// What that answer set off later (a count, a look at the state)
			// is not the refresh this test waits for.
			clearTimeout(state.statsTimer); clearTimeout(state.stateTimer); state.statsTimer = state.stateTimer = 0;
			const during = note.hidden ? "(hidden)" : note.textContent;
			const before = stats;
			await refreshState();
			return JSON.stringify({during, after: note.hidden ? "(hidden)" : note.textContent, refreshed: stats - before});
		} finally { getJSON = real; }
	})()`)
	var r struct {
		During, After string
		Refreshed     int
	}
	if err := json.Unmarshal([]byte(got), &r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.During, "counts are partial: the trail is still being indexed, 5 records so far (1.0 KiB of 4.0 KiB read)") ||
		r.After != "(hidden)" || r.Refreshed != 1 {
		t.Errorf("partial counts: the note while indexing %q, after %q; the counts read again %d times once indexed, want 1", r.During, r.After, r.Refreshed)
	}
	waitFor[bool](t, tb, fmt.Sprintf(`Number(document.querySelector("#totals b")?.textContent.replaceAll(",", "")) === %d`, n))
}
