package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The browser suite drives Debian's chromium headless through the
// DevTools protocol (chromedp): one browser process for the whole test
// binary, a tab of its own browser context (its own cookies) per page a
// test opens. scripts/need-chromium.sh installs it; without it the
// tests skip, except under CI=true, where they fail.

// viewport is the size of every tab, so that screenshots are alike from
// run to run.
const viewportWidth, viewportHeight = 1280, 860

// cspBinding is the function the page calls on each
// securitypolicyviolation event: a violation is reported by the page
// itself, whatever the browser's log says of it.
const cspBinding = "capkitCSPViolation"

var shared struct {
	once   sync.Once
	ctx    context.Context // the browser's; tabs are its children
	cancel context.CancelFunc
	err    error
}

// chromium is the browser's path; a missing one skips the test, or fails
// it under CI=true.
func chromium(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("browser suite: chromium is not on PATH (run scripts/need-chromium.sh)")
		}
		t.Skip("browser suite: chromium is not on PATH (run scripts/need-chromium.sh)")
	}
	return path
}

// browserContext starts the shared browser on first use.
func browserContext(t testing.TB) context.Context {
	t.Helper()
	path := chromium(t)
	shared.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.WindowSize(viewportWidth, viewportHeight),
			// The shared memory is a file: /dev/shm may be small in a
			// container; the default options say so already, kept here
			// for the reader.
			chromedp.Flag("disable-dev-shm-usage", true),
		)
		if os.Geteuid() == 0 {
			// Chromium refuses to run as root with its sandbox; the
			// pages it loads here are the test's own, on loopback.
			opts = append(opts, chromedp.NoSandbox)
		}
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(alloc)
		shared.ctx, shared.cancel = ctx, func() { cancel(); cancelAlloc() }
		shared.err = chromedp.Do(ctx)
	})
	if shared.err != nil {
		t.Fatalf("starting chromium: %v", shared.err)
	}
	return shared.ctx
}

// stopBrowser ends the shared browser, if a test started it.
func stopBrowser() {
	if shared.cancel != nil {
		shared.cancel()
	}
}

// tab is one page in the shared browser, with what it reported: console
// errors, uncaught exceptions, error entries of the browser log, CSP
// violations (problems), and the body of every response it received and
// every server-sent event.
type tab struct {
	ctx context.Context

	mu       sync.Mutex
	problems []string
	warnings []string
	bodies   []body
	pending  sync.WaitGroup // response bodies being read
}

// body is what one response or server-sent event carried.
type body struct {
	url    string
	status int64
	data   []byte
	err    error // reading the body failed
}

// openTab opens a tab in a browser context of its own and starts
// recording; it closes when the test ends.
func openTab(t testing.TB) *tab {
	t.Helper()
	parent := browserContext(t)
	tb := &tab{}
	urls := map[network.RequestID]*network.Response{}
	var ctx context.Context
	var cancel context.CancelFunc
	ctx, cancel = chromedp.NewContext(parent, chromedp.WithNewBrowserContext(), chromedp.WithListener(func(ev any) {
		// The tab's read loop: record, and read bodies elsewhere.
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			text := consoleText(ev.Args)
			switch ev.Type {
			case runtime.ConsoleAPICalledTypeError, runtime.ConsoleAPICalledTypeAssert:
				tb.problem("console.%s: %s", ev.Type, text)
			case runtime.ConsoleAPICalledTypeWarning:
				tb.warn("console.warn: %s", text)
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg += " " + d.Exception.Description
			}
			tb.problem("exception at %s:%d: %s", d.URL, d.LineNumber+1, msg)
		case *log.EventEntryAdded:
			e := ev.Entry
			switch e.Level {
			case log.EntryLevelError:
				tb.problem("log %s: %s (%s)", e.Source, e.Text, e.URL)
			case log.EntryLevelWarning:
				tb.warn("log %s: %s (%s)", e.Source, e.Text, e.URL)
			}
		case *runtime.EventBindingCalled:
			if ev.Name == cspBinding {
				tb.problem("CSP violation: %s", ev.Payload)
			}
		case *network.EventResponseReceived:
			tb.mu.Lock()
			urls[ev.RequestID] = ev.Response
			tb.mu.Unlock()
		case *network.EventEventSourceMessageReceived:
			tb.mu.Lock()
			tb.bodies = append(tb.bodies, body{url: "event-stream " + ev.EventName, data: []byte(ev.Data)})
			tb.mu.Unlock()
		case *network.EventLoadingFinished:
			tb.mu.Lock()
			resp := urls[ev.RequestID]
			tb.mu.Unlock()
			if resp == nil {
				return
			}
			tb.pending.Add(1)
			go tb.readBody(ctx, ev.RequestID, resp)
		}
	}))
	t.Cleanup(func() {
		tb.pending.Wait()
		cancel()
	})
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(viewportWidth, viewportHeight),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if _, err := cdp.Call(ctx, tg, runtime.AddBinding, runtime.AddBindingParams{Name: cspBinding}); err != nil {
				return err
			}
			_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
				Source: `document.addEventListener("securitypolicyviolation", e =>
					window.` + cspBinding + `(e.violatedDirective + " blocked " + (e.blockedURI || "inline") + " at " + e.sourceFile + ":" + e.lineNumber));`,
			})
			return err
		}),
	)
	if err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	tb.ctx = ctx
	return tb
}

func (tb *tab) problem(format string, args ...any) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.problems = append(tb.problems, fmt.Sprintf(format, args...))
}

func (tb *tab) warn(format string, args ...any) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.warnings = append(tb.warnings, fmt.Sprintf(format, args...))
}

func (tb *tab) readBody(ctx context.Context, id network.RequestID, resp *network.Response) {
	defer tb.pending.Done()
	res, err := chromedp.Call(ctx, network.GetResponseBody, network.GetResponseBodyParams{RequestID: id})
	data := res.Body
	if err == nil && res.Base64encoded {
		data, err = base64.StdEncoding.DecodeString(string(res.Body))
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.bodies = append(tb.bodies, body{url: resp.URL, status: resp.Status, data: data, err: err})
}

// reported returns the problems and warnings so far.
func (tb *tab) reported() (problems, warnings []string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.problems...), append([]string(nil), tb.warnings...)
}

// noProblems fails the test with every problem the tab reported.
func (tb *tab) noProblems(t testing.TB) {
	t.Helper()
	problems, warnings := tb.reported()
	for _, w := range warnings {
		t.Logf("browser warning: %s", w)
	}
	if len(problems) != 0 {
		t.Fatalf("the page reported %d problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
}

// received waits for the bodies being read and returns every response
// body and server-sent event the tab received.
func (tb *tab) received() []body {
	tb.pending.Wait()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]body(nil), tb.bodies...)
}

// do runs actions in the tab, failing the test on an error.
func (tb *tab) do(t testing.TB, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, hangGuard)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// eval evaluates expr in tb's page (awaiting a promise) and decodes its
// value into a T.
func eval[T any](t testing.TB, tb *tab, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, hangGuard)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor waits until expr is truthy in tb's page, re-evaluating it on
// each change of the DOM, and returns its value.
func waitFor[T any](t testing.TB, tb *tab, expr string) T {
	t.Helper()
	v, err := poll[T](tb, expr)
	if err != nil {
		t.Fatalf("waiting for %s: %v", expr, err)
	}
	return v
}

// poll is waitFor returning its error.
func poll[T any](tb *tab, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(tb.ctx, hangGuard)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Poll[T](expr, chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(hangGuard)))
}

// screenshotsEnv, set to 1, makes the tests write their screenshots into
// docs/ (a clean clone's CI leaves the tree as it was).
const screenshotsEnv = "CAPKIT_SCREENSHOTS"

// screenshot takes a PNG of the page's top, height pixels high (the
// viewport's height when 0) and, with CAPKIT_SCREENSHOTS=1, writes it to
// docs/img/NAME.png; it returns the image either way.
func (tb *tab) screenshot(t testing.TB, name string, height int) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, hangGuard)
	defer cancel()
	if height == 0 {
		height = viewportHeight
	}
	png, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
		res, err := cdp.Call(ctx, tg, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format:                page.CaptureScreenshotFormatPng,
			Clip:                  &page.Viewport{Width: viewportWidth, Height: float64(height), Scale: 1},
			CaptureBeyondViewport: new(true),
		})
		return res.Data, err
	})
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	return keepScreenshot(t, name, png)
}

// screenshotOf is screenshot of the element the JavaScript expression
// sel gives.
func (tb *tab) screenshotOf(t testing.TB, name, sel string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, hangGuard)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.JSPath(sel)))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	return keepScreenshot(t, name, png)
}

// keepScreenshot writes png to docs/img/NAME.png with CAPKIT_SCREENSHOTS=1.
func keepScreenshot(t testing.TB, name string, png []byte) []byte {
	t.Helper()
	if os.Getenv(screenshotsEnv) != "1" {
		return png
	}
	p := filepath.Join("..", "docs", "img", name+".png")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", p)
	return png
}

// consoleText is a console call's arguments as text.
func consoleText(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		switch {
		case len(a.Value) > 0:
			var s string
			if json.Unmarshal(a.Value, &s) == nil {
				parts = append(parts, s)
			} else {
				parts = append(parts, string(a.Value))
			}
		case a.Description != "":
			parts = append(parts, a.Description)
		default:
			parts = append(parts, string(a.Type))
		}
	}
	return strings.Join(parts, " ")
}

// navigate loads url in the tab and returns the HTTP status of the
// document.
func (tb *tab) navigate(t testing.TB, url string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, hangGuard)
	defer cancel()
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(url))
	if err != nil {
		t.Fatalf("navigating to %s: %v", url, err)
	}
	return resp.Status
}

// waitProblem waits until the tab has reported a problem holding want.
func (tb *tab) waitProblem(t testing.TB, want string) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		problems, _ := tb.reported()
		for _, p := range problems {
			if strings.Contains(p, want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no problem reported holding %q; reported: %q", want, problems)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
