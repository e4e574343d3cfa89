package host

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/internal/testkit/toolrules"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/serve/hostloop"
)

// The host-loop formats over every tool this build registers: the
// providers' published rules (internal/testkit/toolrules, each with its
// citation), one list whatever the format, nothing ungranted listed, and
// strict schemas that mean what the tools' own schemas mean.

// everyEffect is an actor, "all", granted every effect some tool of this
// build has (an effect no tool has is a configuration error).
func everyEffect(t *testing.T) string {
	var names []string
	for _, e := range everyTool(t, "").Runtime.Catalog().Entries() {
		if q := strconv.Quote(string(e.Effect)); !slices.Contains(names, q) {
			names = append(names, q)
		}
	}
	return "[actor.all]\neffects = [" + strings.Join(names, ", ") + "]\n"
}

func loopOf(t *testing.T, s *kernel.Session, f hostloop.Format, opts *hostloop.Options) []hostloop.Spec {
	t.Helper()
	l, err := hostloop.New(s, f, opts)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := l.Specs()
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

func definitions(specs []hostloop.Spec) []json.RawMessage {
	out := make([]json.RawMessage, len(specs))
	for i, s := range specs {
		out[i] = s.Definition
	}
	return out
}

func TestEveryToolKeepsEachProvidersRules(t *testing.T) {
	h := everyTool(t, everyEffect(t))
	s, err := h.NewSession("all", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range hostloop.Formats() {
		for _, strict := range []bool{false, true} {
			for _, all := range []bool{false, true} {
				specs := loopOf(t, s, f, &hostloop.Options{Strict: strict, AllGranted: all})
				if all && len(specs) != h.Runtime.Catalog().Len() {
					t.Fatalf("%s: %d of %d tools listed: the actor is not granted every tool, so the test covers less", f, len(specs), h.Runtime.Catalog().Len())
				}
				if err := toolrules.Check(string(f), definitions(specs)); err != nil {
					t.Errorf("strict %v, all %v:\n%v", strict, all, err)
				}
				if !strict || !all {
					continue
				}
				var notStrict []string
				for _, sp := range specs {
					if !sp.Strict {
						notStrict = append(notStrict, sp.Name+": "+sp.NotStrict)
					}
				}
				t.Logf("%s strict: %d of %d tools not strict\n%s", f, len(notStrict), len(specs), strings.Join(notStrict, "\n"))
			}
		}
	}
}

// nameAndDescription reads a definition's name and description, wherever
// the format puts them.
func nameAndDescription(t *testing.T, def json.RawMessage) (string, string) {
	var d struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Function    *struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"function"`
	}
	if err := json.Unmarshal(def, &d); err != nil {
		t.Fatal(err)
	}
	if d.Function != nil {
		return d.Function.Name, d.Function.Description
	}
	return d.Name, d.Description
}

func TestOneListInEveryFormat(t *testing.T) {
	h := everyTool(t, everyEffect(t))
	s, err := h.NewSession("all", false)
	if err != nil {
		t.Fatal(err)
	}
	check := func(label string, want []string) {
		for _, opts := range []hostloop.Options{{}, {Strict: true}, {AllGranted: true}, {Strict: true, AllGranted: true}} {
			if opts.AllGranted {
				want = nil
				for _, e := range h.Runtime.Catalog().SpecsFor(s.Capabilities()) {
					want = append(want, e.Name+"\n"+e.Description)
				}
			}
			for _, f := range hostloop.Formats() {
				var got []string
				for _, sp := range loopOf(t, s, f, &opts) {
					name, desc := nameAndDescription(t, sp.Definition)
					if name != sp.Name {
						t.Errorf("%s: the definition names %s, the spec %s", f, name, sp.Name)
					}
					got = append(got, name+"\n"+desc)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s, %s, %+v: the names, descriptions or order differ from the session's list:\n%v\nwant\n%v", label, f, opts, got, want)
				}
			}
		}
	}
	hot := func() []string {
		var out []string
		for _, e := range s.Specs() {
			out = append(out, e.Name+"\n"+e.Description)
		}
		return out
	}
	check("hot", hot())
	// tool_search activates tools for the session: every format lists
	// them next, in the session's order.
	if _, err := s.Call(context.Background(), "tool_search", json.RawMessage(`{"query": "zip journal csv", "limit": 12}`)); err != nil {
		t.Fatal(err)
	}
	after := hot()
	if len(after) <= 8 {
		t.Fatalf("tool_search activated nothing: %d tools", len(after))
	}
	check("after tool_search", after)
}

func TestNoFormatListsAToolNotGranted(t *testing.T) {
	h := everyTool(t, "[actor.reader]\neffects = [\"read_file\", \"list\", \"search\", \"tool_search\"]\n")
	s, err := h.NewSession("reader", false)
	if err != nil {
		t.Fatal(err)
	}
	// Activation never grants: asking for a write tool by name lists
	// nothing new.
	if _, err := s.Call(context.Background(), "tool_search", json.RawMessage(`{"query": "write_file run_shell zip_create journal_append"}`)); err != nil {
		t.Fatal(err)
	}
	for _, f := range hostloop.Formats() {
		for _, opts := range []hostloop.Options{{}, {Strict: true, AllGranted: true}, {AllGranted: true}} {
			specs := loopOf(t, s, f, &opts)
			if len(specs) == 0 {
				t.Fatalf("%s: nothing listed", f)
			}
			for _, sp := range specs {
				e, _, ok := h.Runtime.Catalog().Lookup(sp.Name)
				if !ok || !s.Capabilities().Grants(e.Effect) {
					t.Errorf("%s %+v lists %s, which the actor is not granted", f, opts, sp.Name)
				}
			}
		}
	}
}

// TestStrictSchemasMeanTheToolsSchemas holds each tool's strict schema,
// for each provider with a strict mode, to the tool's own: for arguments
// generated from the tool's schema and mutated (toolrules.Pairs), the
// strict schema accepts the arguments as a strict model writes them
// exactly when the tool's schema, with the reported changes applied,
// accepts them as the tool means them. The changes are what the listing
// reports (keywords moved into descriptions, objects closed), so the
// report is held to be complete; the kernel checks the moved keywords on
// every call.
func TestStrictSchemasMeanTheToolsSchemas(t *testing.T) {
	h := everyTool(t, everyEffect(t))
	s, err := h.NewSession("all", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []hostloop.Format{hostloop.OpenAI, hostloop.Anthropic} {
		for _, e := range h.Runtime.Catalog().Entries() {
			// One tool strict at a time: Anthropic's per-request budget
			// would leave most of them out of one list.
			var spec *hostloop.Spec
			for _, sp := range loopOf(t, s, f, &hostloop.Options{Strict: true, AllGranted: true, StrictTools: []string{e.Name}}) {
				if sp.Name == e.Name {
					spec = &sp
				}
			}
			if spec == nil || !spec.Strict {
				t.Logf("%s %s: not strict: %s", f, e.Name, spec.NotStrict)
				continue
			}
			full, _, err := e.Schemas()
			if err != nil {
				t.Fatal(err)
			}
			orig := asMap(t, full)
			ref := resolve(t, applyChanges(t, asMap(t, full), spec.Changes))
			strict := resolve(t, sentSchema(t, f, spec.Definition))
			seed := fnv.New64a()
			seed.Write([]byte(string(f) + e.Name))
			rng := rand.New(rand.NewPCG(seed.Sum64(), 1))
			valid, invalid := 0, 0
			for _, p := range toolrules.Pairs(orig, rng, 300, f == hostloop.OpenAI) {
				refOK, strictOK := ref.Validate(p.Orig) == nil, strict.Validate(p.Sent) == nil
				if refOK != strictOK {
					o, _ := json.Marshal(p.Orig)
					sent, _ := json.Marshal(p.Sent)
					t.Errorf("%s %s (%s): the tool's schema accepts %s: %v; the strict schema accepts %s: %v", f, e.Name, p.What, o, refOK, sent, strictOK)
				}
				if refOK {
					valid++
				} else {
					invalid++
				}
			}
			if valid == 0 || invalid == 0 {
				t.Errorf("%s %s: %d valid and %d invalid arguments generated: the test tries one side only", f, e.Name, valid, invalid)
			}
		}
	}
}

func asMap(t *testing.T, s *jsonschema.Schema) map[string]any {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func resolve(t *testing.T, m map[string]any) *jsonschema.Resolved {
	t.Helper()
	b, _ := json.Marshal(m)
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return r
}

// sentSchema is the input schema a strict definition carries.
func sentSchema(t *testing.T, f hostloop.Format, def json.RawMessage) map[string]any {
	t.Helper()
	var d struct {
		InputSchema map[string]any `json:"input_schema"`
		Function    struct {
			Parameters map[string]any `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(def, &d); err != nil {
		t.Fatal(err)
	}
	if f == hostloop.Anthropic {
		return d.InputSchema
	}
	return d.Function.Parameters
}

// applyChanges is the tool's schema as the reported changes make it.
func applyChanges(t *testing.T, m map[string]any, changes []hostloop.Change) map[string]any {
	t.Helper()
	for _, c := range changes {
		n := m
		for _, tok := range strings.Split(c.Pointer, "/")[1:] {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			switch next := n[tok].(type) {
			case map[string]any:
				n = next
			case []any:
				i, _ := strconv.Atoi(tok)
				n = next[i].(map[string]any)
			default:
				if l, ok := n[tok]; ok {
					t.Fatalf("change %+v: %T at %s", c, l, tok)
				}
				t.Fatalf("change %+v: no %s", c, tok)
			}
		}
		switch c.What {
		case hostloop.ChangeMoved:
			if _, ok := n[c.Keyword]; !ok {
				t.Fatalf("change %+v: the schema has no such keyword there", c)
			}
			delete(n, c.Keyword)
		case hostloop.ChangeClosed:
			n["additionalProperties"] = false
		case hostloop.ChangeAnyOf:
			n["anyOf"], n["oneOf"] = n["oneOf"], nil
			delete(n, "oneOf")
		default:
			t.Fatalf("change %+v: unknown", c)
		}
	}
	return m
}

// TestLoopCallsThroughTheKernel: a strict OpenAI call with nulls for the
// arguments left out reads the file, and the same call without strict
// mode is refused as the tool's schema refuses null.
func TestLoopCallsThroughTheKernel(t *testing.T) {
	h := everyTool(t, everyEffect(t))
	s, err := h.NewSession("all", false)
	if err != nil {
		t.Fatal(err)
	}
	call := `{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.txt\",\"offset\":null,\"limit\":null,\"tail\":null}"}}`
	for _, strict := range []bool{true, false} {
		l, err := hostloop.New(s, hostloop.OpenAI, &hostloop.Options{Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		r, err := l.Call(context.Background(), []byte(call))
		if err != nil {
			t.Fatal(err)
		}
		var msg struct{ Role, Content string }
		if err := json.Unmarshal(r.Result, &msg); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(r.Err == nil, strings.Contains(msg.Content, "alpha")); got != fmt.Sprint(strict, strict) {
			t.Errorf("strict %v: %s (%v)", strict, msg.Content, r.Err)
		}
	}
}
