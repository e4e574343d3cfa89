package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/audit/pgstore"
	"github.com/capkit/capkit/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestOverTheStore: over the PostgreSQL store the page's table and counts
// are those over the same events in memory; events stored after a live
// stream opened arrive on it; no answer holds an argument's value.
func TestOverTheStore(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	st, err := pgstore.Open(url, &pgstore.Options{Spool: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	mem := audit.NewRecent(0)
	for i := range 60 {
		st.Write(event(i))
		mem.Sink().Write(event(i))
	}
	flushCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := st.Flush(flushCtx); err != nil {
		t.Fatal(err)
	}
	r, err := pgstore.OpenReader(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	db, md := newDash(t, r, nil), newDash(t, mem, nil)
	for _, q := range []string{"", "outcome=denied", "actor=bob&tool=glob", "outcome=error"} {
		got := decode[EventsPage](t, get(t, db, http.MethodGet, "/api/events?limit=1000&"+q, nil))
		want := decode[EventsPage](t, get(t, md, http.MethodGet, "/api/events?limit=1000&"+q, nil))
		if len(got.Events) != len(want.Events) || len(got.Events) == 0 {
			t.Fatalf("%q: %d rows, want %d", q, len(got.Events), len(want.Events))
		}
		for i := range got.Events {
			if got.Events[i].Request != want.Events[i].Request || got.Events[i].Policy != want.Events[i].Policy {
				t.Errorf("%q row %d: %+v, want %+v", q, i, got.Events[i], want.Events[i])
			}
		}
		gs := decode[audit.Stats](t, get(t, db, http.MethodGet, "/api/stats?"+q, nil))
		ms := decode[audit.Stats](t, get(t, md, http.MethodGet, "/api/stats?"+q, nil))
		if gs.Calls != ms.Calls || gs.Denials != ms.Denials || len(gs.Tools) != len(ms.Tools) || gs.Tools[0] != ms.Tools[0] {
			t.Errorf("%q: stats %+v, want %+v", q, gs, ms)
		}
	}
	for _, target := range []string{"/api/events?limit=1000", "/api/stats", "/api/state"} {
		if body := get(t, db, http.MethodGet, target, nil).Body.String(); strings.Contains(body, canary) {
			t.Errorf("%s holds an argument's value", target)
		}
	}

	srv := httptest.NewServer(db)
	t.Cleanup(srv.Close)
	msgs := live(t, srv.URL+"/api/live?outcome=denied")
	for i := 60; i < 100; i++ {
		st.Write(event(i))
	}
	if err := st.Flush(flushCtx); err != nil {
		t.Fatal(err)
	}
	if got := liveRequests(t, msgs, 3, func(r Row) string { return r.Outcome }, "denied"); got != "69,80,91" {
		t.Errorf("live sent %v, want the denials stored after it opened: 69,80,91", got)
	}
	st.Close(ctx)
}
