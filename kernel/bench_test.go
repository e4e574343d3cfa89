package kernel

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/capkit/capkit/capability"
)

// BenchmarkDirectHandler is the baseline: the typed handler called without
// the kernel.
func BenchmarkDirectHandler(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		if _, err := echo(ctx, nil, echoArgs{Text: "hello"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKernelCall is one call through Session.Call: lookup, checks,
// schema validation, decoding, the handler under a deadline, encoding, the
// output bound. Its difference from BenchmarkDirectHandler is the kernel's
// overhead.
func BenchmarkKernelCall(b *testing.B) {
	bl := NewBuilder(nil)
	if err := AddTool(bl, Policy{Name: "echo", MaxCalls: 1_000_000}, Meta{Effect: capability.ReadFile, Description: "d"}, echo); err != nil {
		b.Fatal(err)
	}
	rt, _ := bl.Build()
	c, _ := capability.New("a", []capability.Effect{capability.ReadFile}, capability.Scope{})
	s, _ := rt.NewSession("a", []capability.Capability{c}, nil)
	args := json.RawMessage(`{"text":"hello"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Call(ctx, "echo", args); err != nil {
			b.Fatal(err)
		}
	}
}
