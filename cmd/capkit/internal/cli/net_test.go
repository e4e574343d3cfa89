package cli

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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

// TestFetchOutputDestinations: -o /dev/null and -o - work as in curl, and
// a destination that cannot be written is refused before the request is
// sent or charged.
func TestFetchOutputDestinations(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		fmt.Fprint(w, "body bytes")
	}))
	defer srv.Close()
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	port := srv.Listener.Addr().String()[len("127.0.0.1:"):]
	mustNil(t, os.WriteFile(p("ca.pem"), cert, 0o600))
	mustNil(t, os.WriteFile(p("http.json"), []byte(`{"format": 1, "ports": [`+port+`], "private_destinations": ["127.0.0.0/8"], "ca_file": "ca.pem"}`), 0o600))
	mustNil(t, os.WriteFile(p("budget.json"), []byte(`{"format": 1, "group": "up", "window_seconds": 3600, "window_requests": 100, "window_bytes": 1000000}`), 0o600))
	mustNil(t, os.Mkdir(p("dir"), 0o700))
	mustNil(t, os.WriteFile(p("target"), nil, 0o600))
	mustNil(t, os.Symlink(p("target"), p("link")))
	mustNil(t, syscall.Mkfifo(p("fifo"), 0o600))
	fetch := func(out string, extra ...string) []string {
		args := []string{"fetch", srv.URL + "/", "--policy", p("http.json"), "--task", "t",
			"--budget", p("budget.json"), "--budget-root", p("root")}
		if out != "" {
			args = append(args, "-o", out)
		}
		return append(args, extra...)
	}
	// Accepted destinations: each is one request.
	runCases(t, []cmdCase{
		{name: "dev null", args: fetch("/dev/null"), err: "200 HTTP/"},
		{name: "dash is standard output", args: fetch("-"), out: "body bytes", err: "200 HTTP/"},
		{name: "a new file", args: fetch(p("new")), err: "200 HTTP/"},
	})
	if got := requests.Load(); got != 3 {
		t.Fatalf("%d requests, want 3", got)
	}
	if data, err := os.ReadFile(p("new")); err != nil || string(data) != "body bytes" {
		t.Fatalf("new file %q %v", data, err)
	}
	// Refused destinations: no request sent, nothing charged.
	runCases(t, []cmdCase{
		{name: "a directory", args: fetch(p("dir")), code: 2, err: "is a directory"},
		{name: "a missing directory", args: fetch(p("none/file")), code: 3},
		{name: "a symbolic link", args: fetch(p("link")), code: 5, err: "symbolic link"},
		{name: "a FIFO nobody reads", args: fetch(p("fifo")), code: 7, err: "no process reads"},
		{name: "json receipt and body on standard output", args: fetch("-", "--json"), code: 2, out: "-o FILE"},
	})
	if got := requests.Load(); got != 3 {
		t.Fatalf("%d requests after the refusals, want 3", got)
	}
	runCases(t, []cmdCase{{name: "charged for three", args: []string{"budget", "status", p("root")}, out: "window 1: 3/100 requests"}})
	// A FIFO with a reader gets the body.
	got := make(chan string, 1)
	go func() {
		data, _ := os.ReadFile(p("fifo"))
		got <- string(data)
	}()
	for i := 0; ; i++ {
		code, _, errOut := run(t, "", fetch(p("fifo"))...)
		if code == 0 {
			break
		}
		if code != 7 || i > 200 {
			t.Fatalf("fifo with a reader: exit %d %s", code, errOut)
		}
		time.Sleep(10 * time.Millisecond) // the reader has not opened it yet
	}
	if s := <-got; s != "body bytes" {
		t.Fatalf("the FIFO's reader got %q", s)
	}
}
