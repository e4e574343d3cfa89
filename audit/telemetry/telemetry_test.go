package telemetry

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/internal/testkit/otlptest"
	"github.com/capkit/capkit/limits"
)

func event(tool, outcome, policy string, dur time.Duration) *audit.Event {
	r := slog.NewRecord(time.Now(), slog.LevelInfo, audit.MsgCall, 0)
	r.AddAttrs(slog.String("actor", "alice"), slog.String("session", "s1"), slog.String("request", "7"),
		slog.String("tool", tool), slog.String("outcome", outcome), slog.Int("in_bytes", 20), slog.Int64("out_bytes", 300),
		slog.Int64("duration_us", dur.Microseconds()), slog.Int64("calls_left", 9))
	if policy != "" {
		r.AddAttrs(slog.String("policy", policy))
	}
	return audit.Encode(r)
}

// TestExportsSpansAndMetrics: a collector of the test's own receives a
// span per call, with its attributes, times and status, and the call,
// error, duration, denial, budget and loss metrics.
func TestExportsSpansAndMetrics(t *testing.T) {
	col := otlptest.Start(t)
	s, err := New(Options{Endpoint: col.URL(), ServiceVersion: "test", Budgets: func(context.Context) []BudgetUse {
		return []BudgetUse{{Group: "g", Unit: "requests", Used: 3, Limit: 10}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.Write(event("read_file", "ok", "", 1500*time.Microsecond))
	s.Write(event("read_file", "ok", "", 2*time.Millisecond))
	s.Write(event("write_file", "denied", "grant:write_file", 40*time.Microsecond))
	s.Write(event("grep", "limit", "max_calls=5", 10*time.Microsecond))
	s.Write(event("grep", "not_found", "", 10*time.Microsecond))
	lost := slog.NewRecord(time.Now(), slog.LevelWarn, audit.MsgLost, 0)
	lost.AddAttrs(slog.Int64("lost", 12))
	s.Write(audit.Encode(lost))
	other := slog.NewRecord(time.Now(), slog.LevelInfo, "contained command", 0)
	s.Write(audit.Encode(other))
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	spans := col.Spans()
	if len(spans) != 5 {
		t.Fatalf("%d spans, want 5 (one per call)", len(spans))
	}
	byTool := map[string]*tracepb.Span{}
	for _, sp := range spans {
		a := otlptest.Attrs(sp.Attributes)
		byTool[a["mcp.tool.name"].(string)+"/"+a["capkit.outcome"].(string)] = sp
		if a["capkit.actor"] != "alice" || a["mcp.session.id"] != "s1" || a["jsonrpc.request.id"] != "7" ||
			a["capkit.in_bytes"] != int64(20) || a["capkit.out_bytes"] != int64(300) || a["capkit.calls_left"] != int64(9) {
			t.Errorf("span %s attributes %v", sp.Name, a)
		}
	}
	ok := byTool["read_file/ok"]
	if ok == nil || !strings.HasPrefix(ok.Name, "tools/call read_file") || ok.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Fatalf("read_file span %v", ok)
	}
	if d := time.Duration(ok.EndTimeUnixNano - ok.StartTimeUnixNano); d != 1500*time.Microsecond && d != 2*time.Millisecond {
		t.Errorf("span lasts %v", d)
	}
	denied := byTool["write_file/denied"]
	a := otlptest.Attrs(denied.Attributes)
	if denied.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || a["capkit.fault"] != "denied" || a["capkit.policy"] != "grant:write_file" {
		t.Errorf("denied span: %v %v", denied.Status, a)
	}
	for _, c := range []struct {
		name, key, value string
		want             int64
	}{
		{"mcp.tool.calls", "mcp.tool.name", "read_file", 2},
		{"mcp.tool.calls", "", "", 5},
		{"mcp.tool.errors", "", "", 3},
		{"mcp.tool.errors", "capkit.fault", "not_found", 1},
		{"capkit.denials", "capkit.policy", "grant:write_file", 1},
		{"capkit.denials", "capkit.policy", "max_calls=5", 1},
		{"capkit.audit.lost", "", "", 12},
	} {
		if got, seen := col.Sum(c.name, c.key, c.value); !seen || got != c.want {
			t.Errorf("%s{%s=%s} = %d (seen %v), want %d", c.name, c.key, c.value, got, seen, c.want)
		}
	}
	var hist, budget bool
	for _, m := range col.Metrics() {
		if m.Name == "mcp.tool.duration" && m.GetHistogram() != nil && m.Unit == "s" {
			for _, dp := range m.GetHistogram().DataPoints {
				if otlptest.Attrs(dp.Attributes)["mcp.tool.name"] == "read_file" && dp.Count == 2 {
					hist = true
				}
			}
		}
		if m.Name == "capkit.budget.used" && m.GetGauge() != nil && len(m.GetGauge().DataPoints) == 1 && m.GetGauge().DataPoints[0].GetAsInt() == 3 {
			budget = true
		}
	}
	if !hist || !budget {
		t.Errorf("duration histogram %v, budget gauge %v", hist, budget)
	}
}

// TestSlowCollector: while the collector answers no export, Write never
// waits: every call's metrics are kept, the spans past the bounded
// queues are dropped and counted, and once the collector answers again
// the spans it received and those dropped add up to the calls.
func TestSlowCollector(t *testing.T) {
	col := otlptest.Start(t)
	col.Hold()
	s, err := New(Options{Endpoint: col.URL()})
	if err != nil {
		t.Fatal(err)
	}
	n := limits.TelemetrySpanQueue + 2*limits.TelemetrySpanBatch // past the queue and a batch in flight
	for range n {
		s.Write(event("read_file", "ok", "", time.Millisecond))
	}
	if s.SpansDropped() == 0 {
		t.Fatalf("no span dropped of %d while the collector held every export", n)
	}
	col.Release()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	dropped := s.SpansDropped()
	if got := int64(len(col.Spans())); got+dropped != int64(n) || got == 0 {
		t.Errorf("%d spans received and %d dropped of %d calls", got, dropped, n)
	}
	if got, _ := col.Sum("mcp.tool.calls", "", ""); got != int64(n) {
		t.Errorf("mcp.tool.calls %d, want %d: a dropped span lost its call's metrics", got, n)
	}
	if got, _ := col.Sum("capkit.telemetry.dropped", "capkit.dropped", "span"); got != dropped {
		t.Errorf("capkit.telemetry.dropped{span} %d, want %d", got, dropped)
	}
}

// TestCollectorAway: with nothing listening at the endpoint, Write never
// waits and Close gives up at its deadline, saying not everything was
// exported.
func TestCollectorAway(t *testing.T) {
	s, err := New(Options{Endpoint: otlptest.Unreachable(t)})
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		s.Write(event("read_file", "ok", "", time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.Close(ctx); err == nil {
		t.Fatal("Close said everything was exported to a collector that is away")
	}
}

// TestEventsDropped: the host's count of calls it dropped is exported.
func TestEventsDropped(t *testing.T) {
	col := otlptest.Start(t)
	s, err := New(Options{Endpoint: col.URL()})
	if err != nil {
		t.Fatal(err)
	}
	s.SetEventsDropped(41)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := col.Sum("capkit.telemetry.dropped", "capkit.dropped", "event"); got != 41 {
		t.Errorf("capkit.telemetry.dropped{event} %d, want 41", got)
	}
}
