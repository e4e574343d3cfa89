package testkit

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/capkit/capkit/kernel"
)

// RuntimeBound is Runtime with every tool's output bound set to max, so
// that a test can put a result at its tool's bound and one past it.
func RuntimeBound[O any](t testing.TB, register func(*kernel.Builder, O) error, opts O, max int64) *kernel.Runtime {
	t.Helper()
	return build(t, &kernel.Options{PolicyOverride: func(p kernel.Policy) kernel.Policy {
		p.MaxOutputBytes = max
		return p
	}}, register, opts)
}

// WindowCalls is the most calls Windows makes before failing the test.
const WindowCalls = 10_000

// Windows calls tool with args, then again with offsetArg set to each
// result's next offset (the number field next of its structured content)
// until a result has none (or 0), and returns every result in order. A call that
// fails, or a next offset that does not move on, fails the test.
func Windows(t testing.TB, s *kernel.Session, tool string, args map[string]any, offsetArg, next string) []*kernel.Result {
	t.Helper()
	var out []*kernel.Result
	a := maps.Clone(args)
	last := int64(-1)
	for range WindowCalls {
		res, err := Call(t, s, tool, a)
		if err != nil {
			t.Fatalf("%s %v: %v", tool, a, err)
		}
		out = append(out, res)
		var st map[string]json.RawMessage
		if err := json.Unmarshal(res.Structured, &st); err != nil {
			t.Fatalf("%s: structured content %s: %v", tool, res.Structured, err)
		}
		raw, ok := st[next]
		if !ok {
			return out
		}
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil {
			t.Fatalf("%s: %s %s: %v", tool, next, raw, err)
		}
		if n == 0 {
			return out
		}
		if n <= last {
			t.Fatalf("%s: %s %d after %d", tool, next, n, last)
		}
		last, a[offsetArg] = n, n
	}
	t.Fatalf("%s: still windows after %d calls", tool, WindowCalls)
	return nil
}
