package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/gateway"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
)

// Row is an event as the API shows it: its counted members, made one by
// one (never the event's JSON, so nothing else it holds is passed on).
type Row struct {
	Time       time.Time `json:"time"`
	Msg        string    `json:"msg"`
	Actor      string    `json:"actor,omitempty"`
	Session    string    `json:"session,omitempty"`
	Request    string    `json:"request,omitempty"`
	Tool       string    `json:"tool,omitempty"`
	Outcome    string    `json:"outcome,omitempty"`
	Policy     string    `json:"policy,omitempty"`
	CallsLeft  *int64    `json:"calls_left,omitempty"`
	InBytes    int64     `json:"in_bytes"`
	OutBytes   int64     `json:"out_bytes"`
	DurationUS int64     `json:"duration_us"`
	Lost       int64     `json:"lost,omitzero"`
}

func rowOf(e *audit.Event) Row {
	r := Row{Time: e.Time, Msg: e.Msg, Actor: e.Actor, Session: e.Session, Request: e.Request, Tool: e.Tool,
		Outcome: e.Outcome, Policy: e.Policy, InBytes: e.InBytes, OutBytes: e.OutBytes, DurationUS: e.DurationUS, Lost: e.Lost}
	if e.CallsLeft >= 0 {
		left := e.CallsLeft
		r.CallsLeft = &left
	}
	return r
}

func rows(evs []*audit.Event) []Row {
	out := make([]Row, len(evs))
	for i, e := range evs {
		out[i] = rowOf(e)
	}
	return out
}

// EventsPage is /api/events' answer.
type EventsPage struct {
	Events []Row `json:"events"`
	// Next is the cursor of the next (older) page, "" at the oldest.
	Next string `json:"next,omitempty"`
	// Position is where the live stream continues from (the first page
	// only): /api/live?after=POSITION.
	Position string `json:"position,omitempty"`
}

// State is /api/state's answer.
type State struct {
	Source    string               `json:"source"`
	Budgets   []Budget             `json:"budgets"`
	Upstreams []gateway.ToolStatus `json:"upstreams"`
	Chain     *audit.ChainState    `json:"chain"`
	ChainHint string               `json:"chain_hint,omitempty"`
	Actors    []string             `json:"actors"`
	Tools     []string             `json:"tools"`
}

// ParseFilter reads the filters of a query: actor, tool, outcome ("ok",
// "error" or a fault code), from and to (RFC 3339).
func ParseFilter(q url.Values) (audit.Filter, error) {
	f := audit.Filter{Actor: q.Get("actor"), Tool: q.Get("tool"), Outcome: q.Get("outcome")}
	if f.Outcome != "" && f.Outcome != audit.OutcomeOK && f.Outcome != audit.OutcomeError && !fault.Code(f.Outcome).Valid() {
		return f, fault.New(fault.InvalidInput, "outcome %q: want ok, error or a fault code", clip.Text(f.Outcome))
	}
	for _, b := range []struct {
		name string
		t    *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		v := q.Get(b.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return f, fault.New(fault.InvalidInput, "%s %q: want an RFC 3339 time, e.g. 2026-12-02T08:00:00Z", b.name, clip.Text(v))
		}
		*b.t = t
	}
	return f, nil
}

func (d *Dashboard) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := ParseFilter(q)
	if err != nil {
		d.fail(w, err)
		return
	}
	limit := limits.DashboardDefaultRows
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > limits.DashboardMaxRows {
			d.fail(w, fault.New(fault.InvalidInput, "limit %q: want 1 to %d", clip.Text(v), limits.DashboardMaxRows))
			return
		}
		limit = n
	}
	cursor := q.Get("cursor")
	page := EventsPage{}
	if cursor == "" {
		// Taken before the window: an event that arrives in between is
		// in both, never in neither (the page drops the second).
		if page.Position, err = d.src.Position(r.Context()); err != nil {
			d.fail(w, err)
			return
		}
	}
	p, err := d.src.Events(r.Context(), f, cursor, limit)
	if err != nil {
		d.fail(w, err)
		return
	}
	page.Events, page.Next = rows(p.Events), p.Next
	d.json(w, page)
}

func (d *Dashboard) stats(w http.ResponseWriter, r *http.Request) {
	f, err := ParseFilter(r.URL.Query())
	if err != nil {
		d.fail(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), limits.DashboardStatsTimeout)
	defer cancel()
	select {
	case d.counts <- struct{}{}:
		defer func() { <-d.counts }()
	case <-ctx.Done():
		d.fail(w, fault.New(fault.Unavailable, "the counts are busy; retry shortly"))
		return
	}
	st, err := d.src.Stats(ctx, f)
	if err != nil {
		d.fail(w, err)
		return
	}
	d.json(w, st)
}

func (d *Dashboard) state(w http.ResponseWriter, r *http.Request) {
	st := State{Source: d.opts.Describe, ChainHint: d.opts.ChainHint, Budgets: []Budget{}, Upstreams: []gateway.ToolStatus{}}
	if d.opts.Host != nil {
		st.Budgets = append(st.Budgets, d.opts.Host.Budgets(r.Context())...)
		st.Upstreams = append(st.Upstreams, d.opts.Host.UpstreamStatus()...)
	}
	var err error
	if st.Chain, err = d.src.Chain(r.Context()); err != nil {
		d.fail(w, err)
		return
	}
	if st.Actors, st.Tools, err = d.src.Names(r.Context()); err != nil {
		d.fail(w, err)
		return
	}
	d.json(w, st)
}

func (d *Dashboard) json(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := jsonv2.MarshalWrite(w, v, jsonv2.Deterministic(true)); err != nil {
		d.log.Warn("dashboard: an answer could not be written: " + err.Error())
	}
}

// fail answers a failure as {"error", "code"}: 400 for the caller's
// input, 503 for a source that cannot be read, 500 otherwise.
func (d *Dashboard) fail(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	code := fault.CodeOf(err)
	switch {
	case code == fault.InvalidInput:
		status = http.StatusBadRequest
	case code == fault.Unavailable, errors.Is(err, context.DeadlineExceeded):
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	jsonv2.MarshalWrite(w, map[string]string{"error": err.Error(), "code": string(code)})
}

// reversed is evs newest first.
func reversed(evs []*audit.Event) []*audit.Event {
	out := slices.Clone(evs)
	slices.Reverse(out)
	return out
}
