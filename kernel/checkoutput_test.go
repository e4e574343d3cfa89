package kernel

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
)

// A result type whose embedded Page struct shadows, in Go, the embedded
// counts' Page field: encoding/json writes "page" while the inferred
// output schema leaves it out, so a client that validates results (the
// MCP TypeScript SDK's) refuses the result.
type (
	Page struct {
		Offset int `json:"offset"`
	}
	counts struct {
		Page int `json:"page"`
	}
	shadowedOut struct {
		counts
		Page
	}
)

func shadowed(context.Context, *Call, struct{}) (shadowedOut, error) {
	return shadowedOut{counts{Page: 3}, Page{Offset: 1}}, nil
}

// Options.CheckOutput fails a result that does not match its output
// schema with internal; without it the result is returned as is.
func TestCheckOutput(t *testing.T) {
	for _, check := range []bool{false, true} {
		b := NewBuilder(&Options{CheckOutput: check})
		if err := AddTool(b, Policy{Name: "shadowed"}, Meta{Effect: capability.ReadFile, Description: "d"}, shadowed); err != nil {
			t.Fatal(err)
		}
		if err := AddTool(b, Policy{Name: "echo"}, Meta{Effect: capability.ReadFile, Description: "d"}, echo); err != nil {
			t.Fatal(err)
		}
		rt, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		s := session(t, rt, true, capability.ReadFile)
		res, err := s.Call(context.Background(), "shadowed", json.RawMessage(`{}`))
		switch {
		case !check && (err != nil || !strings.Contains(string(res.Structured), `"page":3`)):
			t.Errorf("without CheckOutput: %v, %s", err, res.Structured)
		case check && (fault.CodeOf(err) != fault.Internal || !strings.Contains(err.Error(), "does not match its output schema")):
			t.Errorf("with CheckOutput: %v, want internal naming the output schema", err)
		}
		if _, err := s.Call(context.Background(), "echo", json.RawMessage(`{"text":"a"}`)); err != nil {
			t.Errorf("a matching result (CheckOutput %v): %v", check, err)
		}
	}
}
