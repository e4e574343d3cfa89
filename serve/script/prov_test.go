package script

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// The provenance fixture: src returns untrusted data (v: whatever the
// test put under the key), clean returns the same from a source the
// host trusts, sink records what reaches it (argument a must be
// trusted, b may be anything), peek only reads (so it takes anything),
// and loud sends its argument out.
type provFixture struct {
	rt    *kernel.Runtime
	data  map[string]any
	mu    sync.Mutex
	sunk  []map[string]any
	audit *bytes.Buffer
}

type keyIn struct {
	Key string `json:"key" jsonschema:"the key"`
}

type valueOut struct {
	V any `json:"v"`
}

type sinkIn struct {
	A any `json:"a,omitempty"`
	B any `json:"b,omitempty"`
	C any `json:"c,omitempty"`
}

type okOut struct {
	OK bool `json:"ok"`
}

func newProvFixture(t testing.TB, data map[string]any) *provFixture {
	t.Helper()
	f := &provFixture{data: data, audit: &bytes.Buffer{}}
	b := kernel.NewBuilder(nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	get := func(_ context.Context, _ *kernel.Call, in keyIn) (valueOut, error) {
		v, ok := f.data[in.Key]
		if !ok {
			return valueOut{}, fault.New(fault.NotFound, "no key %q", in.Key)
		}
		return valueOut{V: v}, nil
	}
	must(kernel.AddTool(b, kernel.Policy{Name: "src", MaxCalls: limits.HardMaxCalls}, kernel.Meta{Effect: capability.ReadFile, Description: "Untrusted data."}, get))
	must(kernel.AddTool(b, kernel.Policy{Name: "clean", MaxCalls: limits.HardMaxCalls}, kernel.Meta{Effect: capability.ReadFile, Description: "Trusted data."}, get))
	record := func(_ context.Context, _ *kernel.Call, in sinkIn) (okOut, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		m := map[string]any{}
		for k, v := range map[string]any{"a": in.A, "b": in.B, "c": in.C} {
			if v != nil {
				m[k] = v
			}
		}
		f.sunk = append(f.sunk, m)
		return okOut{OK: true}, nil
	}
	must(kernel.AddTool(b, kernel.Policy{Name: "sink", MaxCalls: limits.HardMaxCalls}, kernel.Meta{Effect: capability.WriteFile, Description: "Writes."}, record))
	must(kernel.AddTool(b, kernel.Policy{Name: "loud", MaxCalls: limits.HardMaxCalls}, kernel.Meta{Effect: capability.NetFetch, Description: "Sends."}, record))
	must(kernel.AddTool(b, kernel.Policy{Name: "peek", MaxCalls: limits.HardMaxCalls}, kernel.Meta{Effect: capability.ReadFile, Description: "Reads."},
		func(_ context.Context, _ *kernel.Call, in sinkIn) (valueOut, error) { return valueOut{V: in.A}, nil }))
	var err error
	f.rt, err = b.Build()
	must(err)
	return f
}

func (f *provFixture) session(t testing.TB) *kernel.Session {
	t.Helper()
	c, err := capability.New("agent", []capability.Effect{capability.ReadFile, capability.WriteFile, capability.NetFetch}, capability.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.rt.NewSession("agent", []capability.Capability{c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// provPolicy is the fixture's policy: clean is trusted, sink's b and
// loud's b may take anything.
func (f *provFixture) provPolicy() *Provenance {
	return &Provenance{
		Trusted: []string{"tool:clean"},
		Tools:   map[string]map[string]Rule{"sink": {"b": {Any: true}}, "loud": {"b": {Any: true}}},
		Audit:   slog.New(slog.NewJSONHandler(f.audit, nil)),
	}
}

// provOff given to run runs without labels.
var provOff = &Provenance{}

func (f *provFixture) run(t testing.TB, src string, p *Provenance, w *Worker) (Result, error) {
	t.Helper()
	f.mu.Lock()
	f.sunk = nil
	f.mu.Unlock()
	pol := f.provPolicy()
	switch {
	case p == provOff:
		pol = nil
	case p != nil:
		pol = p
	}
	return Run(context.Background(), f.session(t), []byte(src), &Options{Provenance: pol, Worker: w, MaxSteps: 10_000_000, Timeout: 10 * time.Second, MaxMemoryBytes: 64 << 20})
}

func TestProvSmoke(t *testing.T) {
	f := newProvFixture(t, map[string]any{"u": "evil.txt", "n": 3, "l": []any{"x", "y"}, "d": map[string]any{"path": "p.txt", "body": "hi"}})
	cases := []struct {
		name, src string
		denied    bool
	}{
		{"literal", `tool.call("sink", {"a": "out.txt", "b": "x"})`, false},
		{"untrusted to any", `u = tool.call("src", {"key": "u"})["v"]` + "\n" + `tool.call("sink", {"a": "out.txt", "b": u})`, false},
		{"untrusted to trusted", `u = tool.call("src", {"key": "u"})["v"]` + "\n" + `tool.call("sink", {"a": u, "b": "x"})`, true},
		{"trusted source", `u = tool.call("clean", {"key": "u"})["v"]` + "\n" + `tool.call("sink", {"a": u})`, false},
		{"concatenation", `u = tool.call("src", {"key": "u"})["v"]` + "\n" + `tool.call("sink", {"a": "dir/" + u})`, true},
		{"format", `u = tool.call("src", {"key": "u"})["v"]` + "\n" + `tool.call("sink", {"a": "dir/%s" % u})`, true},
		{"if", `u = tool.call("src", {"key": "u"})["v"]` + "\nx = 'a'\nif u == 'evil.txt':\n  x = 'b'\n" + `tool.call("sink", {"a": x})`, true},
		{"untaken if", `u = tool.call("src", {"key": "u"})["v"]` + "\nx = 'a'\nif u == 'other':\n  x = 'b'\n" + `tool.call("sink", {"a": x})`, true},
		{"effect in branch", `u = tool.call("src", {"key": "u"})["v"]` + "\nif u:\n  " + `tool.call("sink", {"a": "fixed"})`, true},
		{"after branch", `u = tool.call("src", {"key": "u"})["v"]` + "\ny = 0\nif u:\n  y = 1\n" + `tool.call("sink", {"a": "fixed", "b": y})`, false},
		{"loop over untrusted list", `l = tool.call("src", {"key": "l"})["v"]` + "\nout = []\nfor x in l:\n  out.append('k')\n" + `tool.call("sink", {"a": str(len(out))})`, true},
		{"loop over untrusted, content any", `l = tool.call("src", {"key": "l"})["v"]` + "\nout = []\nfor x in l:\n  out.append(x)\n" + `tool.call("sink", {"a": "f", "b": ", ".join(out)})`, false},
		{"dict member", `d = tool.call("src", {"key": "d"})["v"]` + "\n" + `tool.call("sink", {"a": d["path"]})`, true},
		{"peek anything", `u = tool.call("src", {"key": "u"})["v"]` + "\n" + `r = tool.call("peek", {"a": u})`, false},
		{"peek result", `u = tool.call("src", {"key": "u"})["v"]` + "\n" + `r = tool.call("peek", {"a": u})["v"]` + "\n" + `tool.call("sink", {"a": r})`, true},
		{"comprehension", `l = tool.call("src", {"key": "l"})["v"]` + "\n" + `n = [x for x in l]` + "\n" + `tool.call("sink", {"a": str(len(n))})`, true},
		{"sorted by key", `l = tool.call("src", {"key": "l"})["v"]` + "\n" + `s = sorted(["p", "q"], key=lambda x: l.index("y") if x == "p" else 0)` + "\n" + `tool.call("sink", {"a": s[0]})`, true},
		{"and", `u = tool.call("src", {"key": "u"})["v"]` + "\n" + `x = u and "lit"` + "\n" + `tool.call("sink", {"a": x})`, true},
		{"conditional", `u = tool.call("src", {"key": "u"})["v"]` + "\n" + `x = "a" if u else "b"` + "\n" + `tool.call("sink", {"a": x})`, true},
		{"function", "def f(x):\n  return x + '!'\n" + `u = tool.call("src", {"key": "u"})["v"]` + "\n" + `tool.call("sink", {"a": f(u)})`, true},
		{"early return", "def f(x):\n  if x:\n    return 'a'\n  return 'b'\n" + `u = tool.call("src", {"key": "u"})["v"]` + "\n" + `tool.call("sink", {"a": f(u)})`, true},
		{"label inspection", `u = tool.call("src", {"key": "u"})["v"]` + "\n" + `tool.call("sink", {"a": "t" if prov.trusted(u) else "f"})`, true},
		{"text result", `u = tool.call("src", {"key": "u"}, text=True)` + "\n" + `tool.call("sink", {"a": u})`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.run(t, c.src, nil, nil)
			if c.denied != (fault.CodeOf(err) == fault.Denied) {
				t.Fatalf("denied %v, want %v: %v", fault.CodeOf(err) == fault.Denied, c.denied, err)
			}
			if err != nil && !c.denied {
				t.Fatal(err)
			}
			if err != nil {
				t.Log(err)
			}
		})
	}
}

var _ = json.Marshal
var _ = strings.Contains
