package kernel

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
)

// auditFixture is a runtime whose audit logger is built on AuditHandler,
// with a tool that audits an event of its own (as run does) and a tool
// that calls another through its session (as run_script does).
func auditFixture(t *testing.T) (*Runtime, *syncBuffer, *slog.Logger) {
	t.Helper()
	buf := &syncBuffer{}
	audit := slog.New(AuditHandler(slog.NewJSONHandler(buf, nil)))
	b := NewBuilder(&Options{Audit: audit})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(AddTool(b, Policy{Name: "echo"}, Meta{Effect: capability.ReadFile, Hot: true, Description: "Echoes text."}, echo))
	must(AddTool(b, Policy{Name: "contained"}, Meta{Effect: capability.ReadFile, Hot: true, Description: "Audits how it ran."},
		func(ctx context.Context, _ *Call, _ struct{}) (echoOut, error) {
			ctx, cancel := context.WithCancel(ctx) // a context derived from the call's
			defer cancel()
			audit.LogAttrs(ctx, slog.LevelInfo, "contained command", slog.String("containment", "full"))
			return echoOut{Echo: "ran"}, nil
		}))
	must(AddTool(b, Policy{Name: "outer"}, Meta{Effect: capability.ReadFile, Hot: true, Description: "Calls echo."},
		func(ctx context.Context, call *Call, _ struct{}) (echoOut, error) {
			if _, err := call.Session.Call(ctx, "echo", json.RawMessage(`{"text":"inner"}`)); err != nil {
				return echoOut{}, err
			}
			return echoOut{Echo: "outer"}, nil
		}))
	rt, err := b.Build()
	must(err)
	return rt, buf, audit
}

type auditLine struct {
	raw                                string
	Msg, Actor, Session, Request, Tool string
}

func auditLines(t *testing.T, buf *syncBuffer) []auditLine {
	t.Helper()
	var out []auditLine
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var ev auditLine
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if strings.Count(l, `"session":`) > 1 || strings.Count(l, `"actor":`) > 1 {
			t.Errorf("identity twice: %s", l)
		}
		ev.raw = l
		out = append(out, ev)
	}
	return out
}

// TestAuditTrail: every call event names the session (one id per session,
// another for every other session) and the request it served; an event a
// tool audits with its call's context names them too, and a call a call
// makes serves the outer request.
func TestAuditTrail(t *testing.T) {
	rt, buf, audit := auditFixture(t)
	s1 := session(t, rt, false, capability.ReadFile)
	s2 := session(t, rt, false, capability.ReadFile)
	args := json.RawMessage(`{"text":"x"}`)
	s1.Call(WithRequest(context.Background(), "7"), "echo", args)
	s1.Call(WithRequest(context.Background(), "8"), "contained", nil)
	s2.Call(WithRequest(context.Background(), "7"), "echo", args)
	s1.Call(WithRequest(context.Background(), "9"), "outer", nil)
	s1.Call(context.Background(), "no_such_tool", nil)
	audit.Info("not a call's")

	want := []auditLine{
		{Msg: "call", Actor: "alice", Session: s1.ID(), Request: "7", Tool: "echo"},
		{Msg: "contained command", Actor: "alice", Session: s1.ID(), Request: "8"},
		{Msg: "call", Actor: "alice", Session: s1.ID(), Request: "8", Tool: "contained"},
		{Msg: "call", Actor: "alice", Session: s2.ID(), Request: "7", Tool: "echo"},
		{Msg: "call", Actor: "alice", Session: s1.ID(), Request: "9", Tool: "echo"},
		{Msg: "call", Actor: "alice", Session: s1.ID(), Request: "9", Tool: "outer"},
		{Msg: "call", Actor: "alice", Session: s1.ID(), Tool: "(unknown)"},
		{Msg: "not a call's"},
	}
	got := auditLines(t, buf)
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d:\n%s", len(got), len(want), buf.String())
	}
	for i, w := range want {
		w.raw = got[i].raw
		if got[i] != w {
			t.Errorf("event %d: %s\nwant %+v", i, got[i].raw, w)
		}
	}
	if s1.ID() == s2.ID() || len(s1.ID()) != 16 {
		t.Errorf("session ids %q and %q", s1.ID(), s2.ID())
	}
	if strings.Contains(got[6].raw, `"request"`) {
		t.Errorf("a call without a request names one: %s", got[6].raw)
	}
}
