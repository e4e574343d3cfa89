package testkit

import (
	"log/slog"
	"testing"
	"time"
)

// TestCallRecord: the mix the audit tests count on, call by call.
func TestCallRecord(t *testing.T) {
	actors := [3]string{"a", "b", "c"}
	for _, c := range []struct {
		i                                 int
		actor, tool, outcome, policy, req string
	}{
		{0, "a", "read_file", "ok", "", "0"},
		{3, "a", "glob", "denied", "grant:write_file", "3"},
		{7, "b", "glob", "limit", "max_calls=5", "7"},
		{9, "a", "grep", "not_found", "", "9"},
		{14, "c", "edit_file", "denied", "grant:write_file", "14"},
	} {
		r := CallRecord(c.i, 7*time.Second, actors, slog.String("extra", "x"))
		got := map[string]string{}
		r.Attrs(func(a slog.Attr) bool {
			got[a.Key] = a.Value.String()
			return true
		})
		want := map[string]string{"actor": c.actor, "tool": c.tool, "outcome": c.outcome, "request": c.req, "session": "s", "extra": "x"}
		if c.policy != "" {
			want["policy"] = c.policy
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("call %d: %s = %q, want %q", c.i, k, got[k], v)
			}
		}
		if _, ok := got["policy"]; ok != (c.policy != "") {
			t.Errorf("call %d: policy %q, want %q", c.i, got["policy"], c.policy)
		}
		if !r.Time.Equal(CallsStart.Add(time.Duration(c.i)*7*time.Second)) || r.Message != "call" {
			t.Errorf("call %d: %s at %v", c.i, r.Message, r.Time)
		}
	}
}
