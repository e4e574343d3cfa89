package script

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// benchSession is a session with one cheap tool, echo, whose budget does
// not run out.
func benchSession(b *testing.B) *kernel.Session {
	bl := kernel.NewBuilder(nil)
	if err := kernel.AddTool(bl, kernel.Policy{Name: "echo", MaxCalls: limits.HardMaxCalls}, kernel.Meta{Effect: capability.ReadFile, Description: "Echoes."},
		func(_ context.Context, _ *kernel.Call, in echoIn) (echoOut, error) {
			return echoOut{Echo: in.Text, Count: 1}, nil
		}); err != nil {
		b.Fatal(err)
	}
	rt, err := bl.Build()
	if err != nil {
		b.Fatal(err)
	}
	c, _ := capability.New("a", []capability.Effect{capability.ReadFile}, capability.Scope{})
	s, err := rt.NewSession("a", []capability.Capability{c}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkSessionCall is the baseline: one direct Session.Call of echo.
func BenchmarkSessionCall(b *testing.B) {
	s := benchSession(b)
	ctx := context.Background()
	args := json.RawMessage(`{"text":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Call(ctx, "echo", args); err != nil {
			b.Fatal(err)
		}
	}
}

// benchScriptCalls runs one script making b.N calls of echo, so ns/op is
// the cost of one tool.call: argument encoding, Session.Call, decoding the
// structured result into Starlark values, and the loop's own steps (and,
// with a worker, the round trip over the pipe).
func benchScriptCalls(b *testing.B, w *Worker) {
	s := benchSession(b)
	src := []byte(fmt.Sprintf("for i in range(%d):\n  tool.call('echo', {'text': 'hello'})\n", b.N))
	b.ReportAllocs()
	b.ResetTimer()
	res, err := Run(context.Background(), s, src, &Options{Worker: w, MaxSteps: limits.ScriptHardSteps, Timeout: limits.ScriptHardTimeout})
	if err != nil {
		b.Fatal(err)
	}
	if res.Calls != b.N {
		b.Fatalf("%d calls", res.Calls)
	}
}

func BenchmarkScriptToolCall(b *testing.B) { benchScriptCalls(b, nil) }

func BenchmarkScriptToolCallWorker(b *testing.B) { benchScriptCalls(b, testWorker(b)) }

// BenchmarkScriptSteps is a pure Starlark loop, one iteration per op; it
// includes the step hook's heap sample (about 0.4 µs every
// limits.ScriptMemoryCheckSteps steps).
func BenchmarkScriptSteps(b *testing.B) {
	s := benchSession(b)
	src := []byte(fmt.Sprintf("x = 0\nfor i in range(%d):\n  x += i\n", b.N))
	b.ResetTimer()
	if _, err := Run(context.Background(), s, src, &Options{MaxSteps: limits.ScriptHardSteps, Timeout: limits.ScriptHardTimeout}); err != nil {
		b.Fatal(err)
	}
}

// provWorkflow is 10,000 tool calls and the computations around them:
// formatting each argument, branching on each result, collecting and
// joining, as the performance goal describes.
const provWorkflow = `out = []
n = 0
for i in range(10000):
  r = tool.call("echo", {"text": "item-%d" % i})
  if r["echo"].endswith("7"):
    n += 1
  out.append(r["echo"].upper()[:6])
result = {"n": n, "joined": len(",".join(out))}
`

// BenchmarkScriptProvenance runs provWorkflow without labels and with
// them, in process and in a worker: one op is the whole script.
// bench/provenance.sh runs them side by side.
func BenchmarkScriptProvenance(b *testing.B) {
	for _, c := range []struct {
		name   string
		p      *Provenance
		worker bool
	}{{"off", nil, false}, {"on", &Provenance{}, false}, {"off-worker", nil, true}, {"on-worker", &Provenance{}, true}} {
		b.Run(c.name, func(b *testing.B) {
			s := benchSession(b)
			var w *Worker
			if c.worker {
				w = testWorker(b)
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := Run(context.Background(), s, []byte(provWorkflow), &Options{Provenance: c.p, Worker: w, MaxSteps: limits.ScriptHardSteps, Timeout: limits.ScriptHardTimeout})
				if err != nil || res.Calls != 10000 {
					b.Fatalf("%d calls: %v", res.Calls, err)
				}
			}
		})
	}
}
