package kernel

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func TestPolicyOverride(t *testing.T) {
	cases := []struct {
		name     string
		override func(Policy) Policy
		wantErr  string
		calls    int // budget expected after Build
	}{
		{"unchanged", func(p Policy) Policy { return p }, "", 5},
		{"budget lowered", func(p Policy) Policy { p.MaxCalls = 2; return p }, "", 2},
		{"renaming refused", func(p Policy) Policy { p.Name = "other"; return p }, "renamed", 0},
		{"hard limit still applies", func(p Policy) Policy { p.MaxCalls = limits.HardMaxCalls + 1; return p }, "max calls", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := NewBuilder(&Options{PolicyOverride: c.override})
			err := AddTool(b, Policy{Name: "echo", MaxCalls: 5}, Meta{Effect: capability.ReadFile, Description: "d"}, echo)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rt, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			p, _ := rt.Policy("echo")
			if p.MaxCalls != c.calls {
				t.Fatalf("MaxCalls = %d, want %d", p.MaxCalls, c.calls)
			}
			s := session(t, rt, false, capability.ReadFile)
			for range c.calls {
				if _, err := s.Call(context.Background(), "echo", json.RawMessage(`{"text":"a"}`)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Call(context.Background(), "echo", json.RawMessage(`{"text":"a"}`)); fault.CodeOf(err) != fault.Limit {
				t.Fatalf("call past the overridden budget: %v", err)
			}
		})
	}
}
