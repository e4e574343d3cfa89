package e2e

import (
	"bytes"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBrowserHarness holds the browser suite's own instruments to pages
// of the test's own: a clean page under a strict Content-Security-Policy
// reports nothing, and a page that logs an error, throws, and has an
// inline script the policy blocks reports each of them; response bodies
// are recorded; a screenshot is a PNG of the page's top, and one of an
// element a PNG of its size.
func TestBrowserHarness(t *testing.T) {
	t.Setenv(screenshotsEnv, "") // its pictures are not the docs'
	const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'"
	mux := http.NewServeMux()
	serve := func(path, ctype, text string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Security-Policy", csp)
			w.Header().Set("Content-Type", ctype)
			w.Write([]byte(text))
		})
	}
	serve("/{$}", "text/html", `<!doctype html><html><head><title>clean</title><link rel="icon" href="/favicon.ico"><script src="/app.js" defer></script></head><body><p id="hello">harness-body-9137</p></body></html>`)
	serve("/favicon.ico", "image/x-icon", "")
	serve("/app.js", "text/javascript", `fetch("/data").then(r => r.text()).then(s => { document.getElementById("hello").textContent += " " + s; document.body.dataset.ready = "1"; });`)
	serve("/data", "text/plain", "harness-data-4410")
	serve("/bad", "text/html", `<!doctype html><html><head><link rel="icon" href="/favicon.ico"><script src="/bad.js" defer></script></head><body><script>document.title = "inline ran"</script></body></html>`)
	serve("/bad.js", "text/javascript", `console.error("harness-console-error"); setTimeout(() => { throw new Error("harness-thrown"); }, 0);`)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	t.Run("clean", func(t *testing.T) {
		tb := openTab(t)
		tb.navigate(t, srv.URL+"/")
		waitFor[bool](t, tb, `document.body.dataset.ready === "1"`)
		tb.noProblems(t)
		var saw bool
		for _, b := range tb.received() {
			if strings.HasSuffix(b.url, "/data") && string(b.data) == "harness-data-4410" {
				saw = true
			}
		}
		if !saw {
			t.Fatalf("the body of /data was not recorded: %v", tb.received())
		}
		img := tb.screenshot(t, "harness", 0)
		cfg, err := png.DecodeConfig(bytes.NewReader(img))
		if err != nil || cfg.Width != viewportWidth || cfg.Height != viewportHeight {
			t.Fatalf("screenshot: %v, %dx%d", err, cfg.Width, cfg.Height)
		}
		img = tb.screenshotOf(t, "harness-element", `document.getElementById("hello")`)
		cfg, err = png.DecodeConfig(bytes.NewReader(img))
		if err != nil || cfg.Width != viewportWidth-16 || cfg.Height < 10 || cfg.Height > 40 {
			t.Fatalf("screenshot of an element: %v, %dx%d", err, cfg.Width, cfg.Height)
		}
	})
	t.Run("problems are reported", func(t *testing.T) {
		tb := openTab(t)
		tb.navigate(t, srv.URL+"/bad")
		want := []string{"harness-console-error", "harness-thrown", "CSP violation: script-src"}
		for _, w := range want {
			tb.waitProblem(t, w)
		}
		if title := eval[string](t, tb, `document.title`); title == "inline ran" {
			t.Fatal("the inline script ran under the policy")
		}
	})
}
