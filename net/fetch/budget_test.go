package fetch

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit/nettest"
	"github.com/capkit/capkit/net/budget"
)

func TestFetchUnderBudget(t *testing.T) {
	ca := nettest.NewCA(t)
	var hits atomic.Int64
	port := ca.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/busy":
			w.Header().Set("Retry-After", "600")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/hop":
			http.Redirect(w, r, "/ok", http.StatusFound)
		default:
			fmt.Fprint(w, "0123456789")
		}
	}), "example.com")
	d := nettest.StartDNS(t, map[string][]string{"example.com": {"127.0.0.1"}})
	ctx := context.Background()
	b, err := budget.Open(ctx, filepath.Join(t.TempDir(), "root"), &budget.Policy{Format: 1, Group: "up", WindowSeconds: 3600, WindowRequests: 10, WindowBytes: 1 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p := loopbackPolicy(t, ca, port, `, "max_response_bytes": 65536`)
	f := newFetcher(t, p, &Options{Resolver: d.Resolver(), Budget: b, Task: "job-1"})
	base := fmt.Sprintf("https://example.com:%d", port)
	res, err := f.Fetch(ctx, base+"/hop")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Receipt.Charges) != 2 || res.Receipt.Charges[0].Reserved != 65536 || res.Receipt.Charges[1].Task != "job-1" {
		t.Fatalf("charges %+v", res.Receipt.Charges)
	}
	st, _ := b.Status(ctx)
	if st.WindowRequests != 2 || st.WindowBytes != res.Receipt.WireBytes || len(st.Open) != 0 {
		t.Fatalf("after fetch: %+v (wire %d)", st, res.Receipt.WireBytes)
	}
	_, err = f.Fetch(ctx, base+"/busy")
	wantCode(t, err, fault.HTTP, "429")
	before := hits.Load()
	_, err = f.Fetch(ctx, base+"/ok")
	wantCode(t, err, fault.Deferred, "cooling down")
	if fault.As(err).RetryAfter <= 0 || hits.Load() != before {
		t.Fatalf("deferred fetch reached the server or has no interval: %v", fault.As(err).RetryAfter)
	}
	_, err = New(p, &Options{Budget: b})
	wantCode(t, err, fault.InvalidInput, "task identity")
}

// TestConcurrentFetchesUnderOneByteBudget: a fetch reserves the most its
// response may bring. Without max_response_bytes that is the whole
// window, and a fetch beside it is deferred until the first's deadline
// (not the window's end), saying why; with max_response_bytes below the
// window, both run at once.
func TestConcurrentFetchesUnderOneByteBudget(t *testing.T) {
	ca := nettest.NewCA(t)
	arrived := make(chan struct{}, 2)
	release := make(chan struct{})
	port := ca.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		fmt.Fprint(w, "0123456789")
	}), "example.com")
	d := nettest.StartDNS(t, map[string][]string{"example.com": {"127.0.0.1"}})
	ctx := context.Background()
	url := fmt.Sprintf("https://example.com:%d/", port)
	open := func() *budget.Budget {
		b, err := budget.Open(ctx, filepath.Join(t.TempDir(), "root"), &budget.Policy{Format: 1, Group: "up", WindowSeconds: 3600, WindowRequests: 10, WindowBytes: 1 << 20}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	inFlight := func(f *Fetcher) chan error {
		done := make(chan error, 1)
		go func() { _, err := f.Fetch(ctx, url); done <- err }()
		<-arrived
		return done
	}

	whole := newFetcher(t, loopbackPolicy(t, ca, port, `, "deadline_seconds": 20`), &Options{Resolver: d.Resolver(), Budget: open(), Task: "t"})
	first := inFlight(whole)
	_, err := whole.Fetch(ctx, url)
	wantCode(t, err, fault.Deferred, "reserved by requests in flight (1)")
	if r := fault.As(err).RetryAfter; r > 20*time.Second {
		t.Fatalf("retry after %v, want the first fetch's deadline (20s)", r)
	}
	release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}

	bounded := newFetcher(t, loopbackPolicy(t, ca, port, `, "max_response_bytes": 524288`), &Options{Resolver: d.Resolver(), Budget: open(), Task: "t"})
	a, b := inFlight(bounded), inFlight(bounded)
	close(release)
	if err := <-a; err != nil {
		t.Fatal(err)
	}
	if err := <-b; err != nil {
		t.Fatal(err)
	}
}
