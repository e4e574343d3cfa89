package fetch

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/net/budget"
)

func TestFetchUnderBudget(t *testing.T) {
	ca := newCA(t)
	var hits atomic.Int64
	port := ca.goodServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	d := startDNS(t, map[string][]string{"example.com": {"127.0.0.1"}})
	ctx := context.Background()
	b, err := budget.Open(ctx, filepath.Join(t.TempDir(), "root"), &budget.Policy{Format: 1, Group: "up", WindowSeconds: 3600, WindowRequests: 10, WindowBytes: 1 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p := ca.loopbackPolicy(t, port, `, "max_response_bytes": 65536`)
	f := newFetcher(t, p, &Options{Resolver: d.resolver(), Budget: b, Task: "job-1"})
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
