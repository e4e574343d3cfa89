package audit

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func recentEvent(i int) *Event {
	r := slog.NewRecord(time.Date(2026, 12, 2, 10, 0, i, 0, time.UTC), slog.LevelInfo, MsgCall, 0)
	r.AddAttrs(slog.String("actor", []string{"alice", "bob"}[i%2]), slog.String("tool", "read_file"),
		slog.String("outcome", "ok"), slog.String("request", strconv.Itoa(i)))
	return Encode(r)
}

func reqs(evs []*Event) string {
	s := ""
	for _, e := range evs {
		s += e.Request + ","
	}
	return s
}

// TestRecentAtItsBound: a Recent of n keeps n events; the next one
// pushes the oldest out of every answer (windows, After, counts, names).
func TestRecentAtItsBound(t *testing.T) {
	ctx := context.Background()
	const n = 5
	r := NewRecent(n)
	if NewRecent(0).ring == nil || len(NewRecent(0).ring) != limits.DashboardRingEvents {
		t.Errorf("the default bound is not limits.DashboardRingEvents")
	}
	if pos, _ := r.Position(ctx); pos != "0" {
		t.Errorf("empty position %s", pos)
	}
	for i := range n {
		r.Sink().Write(recentEvent(i))
	}
	p, _ := r.Events(ctx, Filter{}, "", 100)
	if reqs(p.Events) != "4,3,2,1,0," || p.Next != "" {
		t.Errorf("full: %s next %q", reqs(p.Events), p.Next)
	}
	r.Sink().Write(recentEvent(n))
	p, _ = r.Events(ctx, Filter{}, "", 100)
	if reqs(p.Events) != "5,4,3,2,1," {
		t.Errorf("one past the bound: %s", reqs(p.Events))
	}
	if st, _ := r.Stats(ctx, Filter{}); st.Calls != n {
		t.Errorf("stats count %d", st.Calls)
	}
	if c, _ := r.Chain(ctx); c.Total != n || c.Streams != 0 {
		t.Errorf("chain %+v", c)
	}
	// After a cursor whose events left the ring: from the oldest kept.
	evs, pos, _ := r.After(ctx, Filter{}, "0", 100)
	if reqs(evs) != "1,2,3,4,5," || pos != "6" {
		t.Errorf("After 0: %s at %s", reqs(evs), pos)
	}
	evs, pos, _ = r.After(ctx, Filter{Actor: "bob"}, "2", 1)
	if reqs(evs) != "3," || pos != "4" {
		t.Errorf("After 2, bob, limit 1: %s at %s", reqs(evs), pos)
	}
	evs, pos, _ = r.After(ctx, Filter{}, "6", 10)
	if len(evs) != 0 || pos != "6" {
		t.Errorf("After the newest: %s at %s", reqs(evs), pos)
	}
	p, _ = r.Events(ctx, Filter{}, "", 2)
	if reqs(p.Events) != "5,4," || p.Next != "5" {
		t.Errorf("a window of 2: %s next %q", reqs(p.Events), p.Next)
	}
	p, _ = r.Events(ctx, Filter{}, p.Next, 2)
	if reqs(p.Events) != "3,2," || p.Next != "3" {
		t.Errorf("the next window: %s next %q", reqs(p.Events), p.Next)
	}
	p, _ = r.Events(ctx, Filter{}, "0", 2)
	if len(p.Events) != 0 {
		t.Errorf("older than the first: %s", reqs(p.Events))
	}
	actors, tools, _ := r.Names(ctx)
	if fmt.Sprint(actors, tools) != "[alice bob] [read_file]" {
		t.Errorf("names %v %v", actors, tools)
	}
	for _, bad := range []string{"x", "-1", "1.5"} {
		if _, err := r.Events(ctx, Filter{}, bad, 1); fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("cursor %q: %v", bad, err)
		}
		if _, _, err := r.After(ctx, Filter{}, bad, 1); fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("After cursor %q: %v", bad, err)
		}
	}
	ch := r.Changed()
	r.Sink().Write(recentEvent(9))
	select {
	case <-ch:
	default:
		t.Error("Changed was not closed by a new event")
	}
}

// reuse does to e what the handler does once every sink's Write has
// returned: the event and its JSON are written over by the next one.
func reuse(e *Event) {
	b := e.JSON
	for i := range b {
		b[i] = 'x'
	}
	*e = Event{Msg: "reused", Actor: "reused", Tool: "reused", Request: "reused", JSON: b}
}

// TestRecentCopiesWhatItKeeps: what Recent (the dashboard's in-memory
// source) answers is the event as it was written, after the handler
// reused the event and its JSON (Sink: a sink copies what it keeps).
func TestRecentCopiesWhatItKeeps(t *testing.T) {
	ctx := context.Background()
	r := NewRecent(4)
	var want []string
	for i := range 3 {
		e := recentEvent(i)
		want = append(want, string(e.JSON))
		r.Sink().Write(e)
		reuse(e)
	}
	p, _ := r.Events(ctx, Filter{}, "", 10)
	evs, _, _ := r.After(ctx, Filter{}, "0", 10)
	if reqs(p.Events) != "2,1,0," || reqs(evs) != "0,1,2," {
		t.Fatalf("after reuse: window %s, After %s; want 2,1,0, and 0,1,2,", reqs(p.Events), reqs(evs))
	}
	for i, e := range evs {
		if string(e.JSON) != want[i] || e.Actor != []string{"alice", "bob"}[i%2] {
			t.Errorf("event %d after reuse: %s %s, want %s", i, e.Actor, e.JSON, want[i])
		}
	}
	if actors, tools, _ := r.Names(ctx); fmt.Sprint(actors, tools) != "[alice bob] [read_file]" {
		t.Errorf("names after reuse %v %v", actors, tools)
	}
}

// BenchmarkRecentWrite is what the dashboard's in-memory source costs a
// call.
func BenchmarkRecentWrite(b *testing.B) {
	r := NewRecent(0)
	e := recentEvent(1)
	s := r.Sink()
	for b.Loop() {
		s.Write(e)
	}
}
