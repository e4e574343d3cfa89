package hostloop

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit/toolrules"
	"github.com/capkit/capkit/kernel/catalog"
)

// FuzzCall feeds any bytes to every format's Call on a session that may
// only read: Call never panics, fails only with invalid_input, and a reply
// is JSON that answers the call.
func FuzzCall(f *testing.F) {
	for _, fm := range callFormats {
		f.Add(uint8(0), callIn(fm, "c1", "read_file", `{"path":"a.txt"}`))
		f.Add(uint8(0), callIn(fm, "c1", "read_file", `{"path":"a.txt","offset":null}`))
	}
	f.Add(uint8(1), `{"id":"c","type":"function","function":{"name":"grep","arguments":"{\"pattern\":\"a\",\"path\":null}"}}`)
	f.Add(uint8(3), `{"functionCall":{"name":"list_dir","args":{"path":"."}},"name":"x"}`)
	s, _ := fixture(f, capability.ReadFile, capability.List, capability.Search)
	loops := map[Format]*Loop{}
	for _, fm := range callFormats {
		loops[fm] = newLoop(f, s, fm, &Options{Strict: true})
	}
	f.Fuzz(func(t *testing.T, which uint8, raw string) {
		fm := callFormats[int(which)%len(callFormats)]
		r, err := loops[fm].Call(context.Background(), []byte(raw))
		if err != nil {
			if r != nil || fault.CodeOf(err) != fault.InvalidInput {
				t.Fatalf("%s %q: %v, %+v", fm, raw, err, r)
			}
			return
		}
		if !json.Valid(r.Result) || (r.Extra != nil && !json.Valid(r.Extra)) {
			t.Fatalf("%s %q: a reply that is not JSON: %s", fm, raw, r.Result)
		}
	})
}

// FuzzDropNulls: on any input dropNulls fails or returns valid JSON with
// no more members than it was given.
func FuzzDropNulls(f *testing.F) {
	f.Add(`{"r":"x","a":null,"o":{"x":null},"l":[{"y":null}]}`)
	f.Add(`{"u":{"q":"s","p":null}}`)
	root := schema(f, `{"type":"object","properties":{"a":{"type":"integer"},"r":{"type":"string"},
		"o":{"type":"object","properties":{"x":{"type":"boolean"}}},
		"l":{"type":"array","items":{"type":"object","properties":{"y":{"type":"number"}}}},
		"u":{"anyOf":[{"type":"object","properties":{"p":{"type":"string"}}},{"$ref":"#"}]}},"required":["r"]}`)
	f.Fuzz(func(t *testing.T, in string) {
		if !jsontext.Value(in).IsValid() || jsontext.Value(in).Kind() != '{' {
			return
		}
		out, changed, err := dropNulls(context.Background(), root, root, jsontext.Value(in), 0)
		if err != nil {
			return
		}
		if !jsontext.Value(out).IsValid() || (!changed && string(out) != in) || len(out) > len(in)+len(in)/2+16 {
			t.Fatalf("dropNulls(%s) = %s (changed %v)", in, out, changed)
		}
	})
}

// FuzzRender feeds any object schema (an upstream's tool behind the
// gateway has one capkit did not write) to every format and strictness:
// rendering never panics, and what it writes keeps the provider's
// published rules.
func FuzzRender(f *testing.F) {
	for _, doc := range []string{
		`{"type":"object","properties":{"a":{"type":"string","maxLength":3},"b":{"type":["integer","null"],"minimum":1}},"required":["a"]}`,
		`{"type":"object","properties":{"p":{"$ref":"#/$defs/pt"}},"$defs":{"pt":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}}}`,
		`{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer","enum":[1,2]}]},"n":{"$ref":"#"}}}`,
		`{"type":"object","properties":{"t":{"type":"array","items":{"type":"string","format":"date"},"minItems":2,"uniqueItems":true}}}`,
		`{"type":"object","properties":{"env":{"type":"object","additionalProperties":{"type":"string"}},"-i":{"type":"boolean"}}}`,
		refChain(3), unionChain(3),
	} {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var s jsonschema.Schema
		if json.Unmarshal([]byte(doc), &s) != nil || s.Type != "object" {
			return
		}
		c, err := catalog.New([]catalog.Entry{{Name: "upstream_tool", Effect: capability.ReadFile, Origin: "upstream fuzz",
			Description: "a tool whose schema an upstream wrote", InputSchema: &s}})
		if err != nil {
			return
		}
		e, _, _ := c.Lookup("upstream_tool")
		if _, _, err := e.Schemas(); err != nil {
			return // the kernel refuses it: never listed
		}
		for _, fm := range Formats() {
			for _, strict := range []bool{false, true} {
				r, err := render(e, fm, strict)
				if err != nil {
					t.Fatalf("%s strict %v: %v", fm, strict, err)
				}
				if err := toolrules.Check(string(fm), []json.RawMessage{r.spec.Definition}); err != nil {
					t.Fatalf("%s strict %v: %s\n%v", fm, strict, r.spec.Definition, err)
				}
			}
		}
	})
}
