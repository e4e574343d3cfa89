package hostloop

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/limits"
)

// entry is a catalog entry with the input schema doc, as an upstream's
// tool behind the gateway has: a schema capkit did not write.
func entry(t testing.TB, doc string) *catalog.Entry {
	t.Helper()
	c, err := catalog.New([]catalog.Entry{{Name: "upstream_tool", Effect: capability.ReadFile, Origin: "upstream test",
		Description: "a tool whose schema an upstream wrote", InputSchema: schema(t, doc)}})
	if err != nil {
		t.Fatal(err)
	}
	e, _, ok := c.Lookup("upstream_tool")
	if !ok {
		t.Fatal("no entry")
	}
	if _, _, err := e.Schemas(); err != nil {
		t.Fatal(err)
	}
	return e
}

// refChain is a schema of n definitions, each with two properties that
// refer to the next: a few hundred bytes that name 2^n paths.
func refChain(n int) string {
	var defs []string
	for i := range n {
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"a":{"$ref":"#/$defs/d%d"},"b":{"$ref":"#/$defs/d%d"}}}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"string"}`, n))
	return `{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{` + strings.Join(defs, ",") + `}}`
}

// unionChain is the same fan-out through anyOf, which admitsNull and
// branchFor follow.
func unionChain(n int) string {
	var defs []string
	for i := range n {
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"p":{"type":"string"}},"required":["p"]}`, n))
	return `{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{` + strings.Join(defs, ",") + `}}`
}

// TestSchemasThatFanOut: a schema whose references fan out (each
// definition naming the next twice) is listed in every format and
// strictness with a definition of the order of its own size, and a call
// through it runs: nothing follows the 2^n paths one by one.
func TestSchemasThatFanOut(t *testing.T) {
	const n = 40
	for _, doc := range []string{refChain(n), unionChain(n)} {
		e := entry(t, doc)
		for _, f := range Formats() {
			for _, strict := range []bool{false, true} {
				r, err := render(e, f, strict)
				if err != nil {
					t.Fatalf("%s strict %v: %v", f, strict, err)
				}
				if len(r.spec.Definition) > 4*len(doc)+4096 {
					t.Errorf("%s strict %v: a definition of %d bytes for a schema of %d", f, strict, len(r.spec.Definition), len(doc))
				}
				if f == Gemini && (len(r.spec.Changes) != 1 || r.spec.Changes[0].What != ChangeWhole || r.spec.Changes[0].Keyword != "$ref") {
					t.Errorf("gemini: changes %+v, want the schema sent whole for its references", r.spec.Changes)
				}
			}
		}
		full, _, _ := e.Schemas()
		if _, _, err := dropNulls(context.Background(), full, full, []byte(`{"x":{"p":null,"a":{"b":null}}}`), 0); err != nil {
			t.Error(err)
		}
		_ = admitsNull(full, full.Properties["x"])
		_ = recursive(full)
	}
}

// TestBranchFor: the branch a value follows, through references and
// nested unions; none when two fit or the references lead nowhere.
func TestBranchFor(t *testing.T) {
	root := schema(t, `{"type":"object","$defs":{
		"p":{"type":"object","properties":{"p":{"type":"string"}},"required":["p"]},
		"q":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]},
		"u":{"anyOf":[{"$ref":"#/$defs/p"},{"anyOf":[{"$ref":"#/$defs/q"},{"$ref":"#/$defs/q"}]}]},
		"one":{"anyOf":[{"$ref":"#/$defs/p"}]},
		"loop":{"$ref":"#/$defs/loop"},
		"amb":{"anyOf":[{"type":"object","properties":{"p":{}}},{"type":"object","properties":{"p":{}}}]}}}`)
	for _, c := range []struct{ def, value, want string }{
		{"u", `{"p":"x"}`, "p"},
		{"u", `{"q":"x"}`, "q"}, // named twice, one branch
		{"u", `{"r":"x"}`, ""},
		{"one", `{"q":"x"}`, ""}, // a union's one branch still has to fit
		{"one", `{"p":"x"}`, "p"},
		{"loop", `{}`, ""},
		{"amb", `{"p":1}`, ""},
		{"p", `{"q":1}`, "p"}, // no union: the schema itself
	} {
		got := branchFor(root, &jsonschema.Schema{Ref: "#/$defs/" + c.def}, []byte(c.value))
		want := root.Defs[c.want]
		if c.want == "" {
			want = nil
		}
		if got != want {
			t.Errorf("branchFor(%s, %s) = %v, want $defs/%s", c.def, c.value, got, c.want)
		}
	}
}

// TestGeminiInlinedNodesEdge: a reference whose target has exactly
// limits.GeminiInlinedNodes nodes is inlined; one more and the schema
// goes whole.
func TestGeminiInlinedNodesEdge(t *testing.T) {
	for _, c := range []struct {
		nodes int
		whole bool
	}{{limits.GeminiInlinedNodes, false}, {limits.GeminiInlinedNodes + 1, true}} {
		props := make([]string, c.nodes-1) // the target object, then its properties
		for i := range props {
			props[i] = fmt.Sprintf(`"p%d":{"type":"string"}`, i)
		}
		doc := `{"type":"object","properties":{"x":{"$ref":"#/$defs/d"}},"$defs":{"d":{"type":"object","properties":{` + strings.Join(props, ",") + `}}}}`
		r, err := render(entry(t, doc), Gemini, false)
		if err != nil {
			t.Fatal(err)
		}
		if whole := strings.Contains(string(r.spec.Definition), `"parametersJsonSchema"`); whole != c.whole {
			t.Errorf("%d nodes inlined: sent whole %v, want %v", c.nodes, whole, c.whole)
		}
	}
}

// TestCanceledCallIsNotInvalidInput: once the call's context is done,
// undoing strict mode's nulls stops, and the reply says the call was not
// made for that reason, not that the model's arguments were wrong.
func TestCanceledCallIsNotInvalidInput(t *testing.T) {
	s, _ := fixture(t)
	l := newLoop(t, s, OpenAI, &Options{Strict: true})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := l.Call(ctx, []byte(callIn(OpenAI, "c1", "read_file", `{"path":"a.txt","offset":null}`)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Err == nil || r.Err.Code == fault.InvalidInput || !strings.Contains(r.Err.Error(), "not called") {
		t.Errorf("reply %v", r.Err)
	}
}
