package cli

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

func TestFetchAndBudgetCommands(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			http.NotFound(w, r)
		case "/busy":
			w.Header().Set("Retry-After", "300")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			fmt.Fprint(w, "body bytes")
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	port := srv.Listener.Addr().(interface{ String() string }).String()
	port = port[len("127.0.0.1:"):]
	files := map[string]string{
		"ca.pem":      string(cert),
		"http.json":   `{"format": 1, "ports": [` + port + `], "private_destinations": ["127.0.0.0/8"], "ca_file": "ca.pem"}`,
		"closed.json": `{"format": 1, "ports": [` + port + `], "ca_file": "ca.pem"}`,
		"bad.json":    `{"format": 1, "portz": []}`,
		"budget.json": `{"format": 1, "group": "up", "window_seconds": 3600, "window_requests": 4, "window_bytes": 1000000}`,
	}
	for name, body := range files {
		mustNil(t, os.WriteFile(p(name), []byte(body), 0o600))
	}
	url := srv.URL + "/"
	bud := []string{"--budget", p("budget.json"), "--budget-root", p("root"), "--task", "t1"}
	runCases(t, []cmdCase{
		{name: "body to stdout, receipt to stderr", args: []string{"fetch", url, "--policy", p("http.json"), "--task", "t"}, out: "body bytes", err: "200 HTTP/"},
		{name: "json receipt needs -o", args: []string{"fetch", url, "--policy", p("http.json"), "--task", "t", "--json"}, code: 2},
		{name: "json receipt", args: append([]string{"fetch", url, "--policy", p("http.json"), "-o", p("out"), "--json"}, bud...), out: `"sha256": "`},
		{name: "status", args: []string{"budget", "status", p("root")}, out: "window 1: 1/4 requests, 10/1000000 bytes"},
		{name: "guard", args: []string{"fetch", url, "--policy", p("closed.json"), "--task", "t"}, code: 5, err: "loopback"},
		{name: "strict policy", args: []string{"fetch", url, "--policy", p("bad.json"), "--task", "t"}, code: 2, err: "line 1, column 15"},
		{name: "http status", args: append([]string{"fetch", srv.URL + "/missing", "--policy", p("http.json")}, bud...), code: 11, err: "HTTP 404"},
		{name: "429", args: append([]string{"fetch", srv.URL + "/busy", "--policy", p("http.json")}, bud...), code: 11, err: "HTTP 429"},
		{name: "cooldown defers", args: append([]string{"fetch", url, "--policy", p("http.json"), "--json", "-o", p("out2")}, bud...), code: 8, out: `"retry_after_seconds": 300`},
		{name: "store flags", args: []string{"fetch", url, "--policy", p("http.json"), "--task", "t", "--budget", p("budget.json")}, code: 2, err: "exactly one of"},
		{name: "clear", args: []string{"budget", "clear-cooldown", p("root")}, out: "cleared"},
		{name: "reserve", args: []string{"budget", "reserve", p("root"), "--budget", p("budget.json"), "--task", "op", "--bytes", "5"}, out: "reserved "},
		{name: "spent", args: []string{"budget", "reserve", p("root"), "--budget", p("budget.json"), "--task", "op", "--bytes", "5"}, code: 8, err: "used its 4 requests"},
		{name: "unquiesced snapshot", args: []string{"budget", "snapshot", p("root"), p("snap.json")}, code: 4, err: "not quiesced"},
		{name: "settle unknown", args: []string{"budget", "settle", p("root"), "nope", "--bytes", "0"}, code: 3},
		{name: "status of nothing", args: []string{"budget", "status", p("none")}, code: 3},
	})
	// Settle the open reservation, then snapshot and transfer.
	code, out, _ := run(t, "", "budget", "status", p("root"), "--json")
	var id string
	if _, err := fmt.Sscanf(out[indexOf(out, `"id": "`)+7:], "%32s", &id); code != 0 || err != nil {
		t.Fatalf("status %d %q", code, out)
	}
	runCases(t, []cmdCase{
		{name: "settle", args: []string{"budget", "settle", p("root"), id, "--bytes", "5"}, out: "settled"},
		{name: "snapshot", args: []string{"budget", "snapshot", p("root"), p("snap.json")}, out: "sealed"},
		{name: "sealed refuses", args: []string{"budget", "reserve", p("root"), "--budget", p("budget.json"), "--task", "op", "--bytes", "5"}, code: 5, err: "sealed"},
		{name: "transfer", args: []string{"budget", "transfer", p("snap.json"), p("new")}, out: "transferred"},
		{name: "moved", args: []string{"budget", "status", p("new")}, out: "window 1: 4/4 requests"},
		{name: "old refuses", args: []string{"budget", "status", p("root")}, out: "transferred to"},
		{name: "one new root only", args: []string{"budget", "transfer", p("snap.json"), p("other")}, code: 4},
	})
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
