package hostloop

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/policy"
	"github.com/capkit/capkit/files/tools"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/internal/testkit/toolrules"
	"github.com/capkit/capkit/kernel"
)

func schema(t testing.TB, doc string) *jsonschema.Schema {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func encode(t *testing.T, s *jsonschema.Schema) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStrictForms pins the transform on schemas the registered tools do
// not have (those are held in host's tests): what each provider gets, what
// is moved or closed, and why a schema cannot be strict.
func TestStrictForms(t *testing.T) {
	for _, c := range []struct {
		name, in string
		r        *rules
		want     string // the strict schema, or "" when it cannot be strict
		err      string // part of why not
		changes  []Change
	}{
		{"optional made nullable", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer","minimum":1}},"required":["a"],"additionalProperties":false}`,
			openAIRules, `{"type":"object","required":["a","b"],"properties":{"a":{"type":"string"},"b":{"type":["integer","null"],"minimum":1}},"additionalProperties":false}`, "", nil},
		{"anthropic keeps optional, moves bounds", `{"type":"object","properties":{"a":{"type":"string","maxLength":3},"b":{"type":"integer","minimum":1}},"required":["a"],"additionalProperties":false}`,
			anthropicRules, `{"type":"object","required":["a"],"properties":{"a":{"type":"string","description":"{\"maxLength\":3}"},"b":{"type":"integer","description":"{\"minimum\":1}"}},"additionalProperties":false}`, "",
			[]Change{{"/properties/a", "maxLength", ChangeMoved}, {"/properties/b", "minimum", ChangeMoved}}},
		{"open object closed", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
			openAIRules, `{"type":"object","required":["a"],"properties":{"a":{"type":"string"}},"additionalProperties":false}`, "",
			[]Change{{"", "additionalProperties", ChangeClosed}}},
		{"enum of an optional gets null", `{"type":"object","properties":{"u":{"type":"string","enum":["F","C"]}},"additionalProperties":false}`,
			openAIRules, `{"type":"object","required":["u"],"properties":{"u":{"type":["string","null"],"enum":["F","C",null]}},"additionalProperties":false}`, "", nil},
		{"ref made nullable as a union", `{"type":"object","properties":{"p":{"$ref":"#/$defs/pt"}},"additionalProperties":false,"$defs":{"pt":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"],"additionalProperties":false}}}`,
			openAIRules, `{"$defs":{"pt":{"type":"object","required":["x"],"properties":{"x":{"type":"number"}},"additionalProperties":false}},"type":"object","required":["p"],"properties":{"p":{"anyOf":[{"$ref":"#/$defs/pt"},{"type":"null"}]}},"additionalProperties":false}`, "", nil},
		{"oneOf as anyOf", `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}},"required":["v"],"additionalProperties":false}`,
			openAIRules, `{"type":"object","required":["v"],"properties":{"v":{"anyOf":[{"type":"string"},{"type":"integer"}]}},"additionalProperties":false}`, "",
			[]Change{{"/properties/v", "oneOf", ChangeAnyOf}}},
		{"a map cannot be strict", `{"type":"object","properties":{"env":{"type":"object","additionalProperties":{"type":"string"}}},"additionalProperties":false}`,
			openAIRules, "", "/properties/env: additionalProperties is a schema", nil},
		{"any value cannot be strict", `{"type":"object","properties":{"v":{}},"additionalProperties":false}`,
			anthropicRules, "", "/properties/v: admits a value of any type", nil},
		{"recursion: OpenAI yes", `{"type":"object","properties":{"n":{"$ref":"#"}},"additionalProperties":false}`,
			openAIRules, `{"type":"object","required":["n"],"properties":{"n":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},"additionalProperties":false}`, "", nil},
		{"recursion: Anthropic no", `{"type":"object","properties":{"n":{"$ref":"#"}},"additionalProperties":false}`,
			anthropicRules, "", "recursive", nil},
		{"allOf", `{"type":"object","allOf":[{"properties":{"a":{"type":"string"}}}],"additionalProperties":false,"properties":{"a":{"type":"string"}}}`,
			openAIRules, "", "allOf", nil},
		{"a tuple", `{"type":"object","properties":{"t":{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"string"}}},"additionalProperties":false}`,
			openAIRules, "", "tuple", nil},
		{"external ref", `{"type":"object","properties":{"t":{"$ref":"https://example.com/s.json"}},"additionalProperties":false}`,
			openAIRules, "", "not a reference into the schema", nil},
		{"anthropic formats, patterns and minItems", `{"type":"object","properties":{"d":{"type":"string","format":"date"},"x":{"type":"string","format":"regex"},"p":{"type":"string","pattern":"\\bword\\b"},"q":{"type":"string","pattern":"^a{0,200}$"},"l":{"type":"array","items":{"type":"string"},"minItems":2}},"required":["d","x","p","q","l"],"additionalProperties":false}`,
			anthropicRules, `{"type":"object","required":["d","x","p","q","l"],"properties":{"d":{"type":"string","format":"date"},"l":{"type":"array","description":"{\"minItems\":2}","items":{"type":"string"}},"p":{"type":"string","description":"{\"pattern\":\"\\\\bword\\\\b\"}"},"q":{"type":"string","description":"{\"pattern\":\"^a{0,200}$\"}"},"x":{"type":"string","description":"{\"format\":\"regex\"}"}},"additionalProperties":false}`, "",
			[]Change{{"/properties/l", "minItems", ChangeMoved}, {"/properties/p", "pattern", ChangeMoved}, {"/properties/q", "pattern", ChangeMoved}, {"/properties/x", "format", ChangeMoved}}},
		{"enum alone is typed", `{"type":"object","properties":{"m":{"enum":["a","b"]}},"required":["m"],"additionalProperties":false}`,
			anthropicRules, `{"type":"object","required":["m"],"properties":{"m":{"type":"string","enum":["a","b"]}},"additionalProperties":false}`, "", nil},
		{"a type JSON lacks", `{"type":"object","properties":{"v":{"type":["string",""]}},"additionalProperties":false}`,
			anthropicRules, "", `/properties/v: type "" is not a JSON type`, nil},
		{"a root union", `{"type":"object","anyOf":[{"type":"object"}]}`, openAIRules, "", "the root is a union", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := schema(t, c.in)
			before := encode(t, in)
			got := strictForm(in, c.r)
			if encode(t, in) != before {
				t.Fatal("the tool's schema was changed")
			}
			if c.want == "" {
				if got.err == nil || !strings.Contains(got.err.Error(), c.err) {
					t.Fatalf("err = %v, want one saying %q", got.err, c.err)
				}
				return
			}
			if got.err != nil {
				t.Fatal(got.err)
			}
			if s := encode(t, got.schema); !sameJSON(s, c.want) {
				t.Errorf("strict form\n%s\nwant\n%s", s, c.want)
			}
			if g, w := changesOf(got.changes), changesOf(c.changes); g != w {
				t.Errorf("changes %s, want %s", g, w)
			}
		})
	}
}

func sameJSON(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

func changesOf(cs []Change) string {
	b, _ := json.Marshal(cs)
	if len(cs) == 0 {
		return "[]"
	}
	return string(b)
}

func TestDropNulls(t *testing.T) {
	root := schema(t, `{"type":"object","properties":{
		"a":{"type":"integer"},"n":{"type":["null","string"]},"r":{"type":"string"},
		"o":{"type":"object","properties":{"x":{"type":"boolean"}},"additionalProperties":false},
		"l":{"type":"array","items":{"type":"object","properties":{"y":{"type":"number"}}}},
		"u":{"anyOf":[{"type":"object","properties":{"p":{"type":"string"}},"required":["p"]},{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}]},
		"amb":{"anyOf":[{"type":"object","properties":{"p":{"type":"string"}}},{"type":"object","properties":{"p":{"type":"string"}}}]}
	},"required":["r"]}`)
	for in, want := range map[string]string{
		`{"r":"x","a":null}`:                          `{"r":"x"}`,
		`{"r":null,"a":1}`:                            `{"r":null,"a":1}`, // required: the kernel refuses it
		`{"r":"x","n":null}`:                          `{"r":"x","n":null}`,
		`{"r":"x","o":{"x":null}}`:                    `{"r":"x","o":{}}`,
		`{"r":"x","l":[{"y":null},{"y":1.50}]}`:       `{"r":"x","l":[{},{"y":1.50}]}`,
		`{"r":"x","u":{"q":"s","p":null}}`:            `{"r":"x","u":{"q":"s","p":null}}`, // both branches declare... only the second requires q
		`{"r":"x","u":{"q":"s"}}`:                     `{"r":"x","u":{"q":"s"}}`,
		`{"r":"x","amb":{"p":null}}`:                  `{"r":"x","amb":{"p":null}}`, // two branches fit: left alone
		`{"r":"x","a":12345678901234567890123}`:       `{"r":"x","a":12345678901234567890123}`,
		`{"r":"x","a":null,"z":"\u00e9\ud83d\ude00"}`: `{"r":"x","z":"é😀"}`,
	} {
		got, _, err := dropNulls(context.Background(), root, root, []byte(in), 0)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if string(got) != want {
			t.Errorf("dropNulls(%s) = %s, want %s", in, got, want)
		}
	}
	if _, _, err := dropNulls(context.Background(), root, root, []byte(`{"r":"x","r":"y"}`), 0); err == nil {
		t.Error("duplicate member names passed")
	}
}

// fixture is a session holding the file tools on a root with a.txt, and
// a PNG image.
func fixture(t testing.TB, effects ...capability.Effect) (*kernel.Session, string) {
	t.Helper()
	root := testkit.TempDir(t)
	for name, text := range map[string]string{"a.txt": "alpha\nbeta\n", "b.txt": "gamma\n"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
	if err := os.WriteFile(filepath.Join(root, "dot.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	rt := testkit.Runtime(t, tools.RegisterTools, &tools.ToolOptions{Events: policy.NewEvents()})
	if len(effects) == 0 {
		effects = []capability.Effect{capability.ReadFile, capability.WriteFile, capability.EditFile, capability.List, capability.Search, capability.ToolSearch, capability.MoveFile}
	}
	return testkit.Session(t, rt, testkit.Grant(t, []string{root}, effects...)), root
}

func newLoop(t testing.TB, s *kernel.Session, f Format, opts *Options) *Loop {
	t.Helper()
	l, err := New(s, f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// calls are one call to a tool in each format's shape.
func callIn(f Format, id, name, args string) string {
	switch f {
	case Anthropic:
		return `{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + args + `}`
	case OpenAI:
		a, _ := json.Marshal(args)
		return `{"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + string(a) + `}}`
	case OpenAIResponses:
		a, _ := json.Marshal(args)
		return `{"type":"function_call","id":"fc_1","call_id":"` + id + `","name":"` + name + `","arguments":` + string(a) + `}`
	case Gemini:
		return `{"functionCall":{"id":"` + id + `","name":"` + name + `","args":` + args + `}}`
	}
	return ""
}

var callFormats = []Format{Anthropic, OpenAI, OpenAIResponses, Gemini}

// resultText is the text and error flag a result carries.
func resultText(t *testing.T, f Format, r *Reply) (string, bool) {
	t.Helper()
	var v struct {
		Type, ToolUseID, ToolCallID, CallID string
		Role                                string
		Content                             json.RawMessage
		IsError                             bool `json:"is_error"`
		Output                              json.RawMessage
		FunctionResponse                    *struct {
			ID, Name string
			Response map[string]string
		} `json:"functionResponse"`
	}
	if err := json.Unmarshal(r.Result, &v); err != nil {
		t.Fatal(err)
	}
	switch f {
	case Anthropic:
		var blocks []struct{ Type, Text string }
		json.Unmarshal(v.Content, &blocks)
		text := ""
		for _, b := range blocks {
			text += b.Text
		}
		return text, v.IsError
	case OpenAI:
		var s string
		json.Unmarshal(v.Content, &s)
		return s, strings.HasPrefix(s, string(r.errCode()))
	case OpenAIResponses:
		var s string
		if json.Unmarshal(v.Output, &s) != nil {
			var parts []struct{ Type, Text string }
			json.Unmarshal(v.Output, &parts)
			s = parts[0].Text
		}
		return s, strings.HasPrefix(s, string(r.errCode()))
	case Gemini:
		if e, ok := v.FunctionResponse.Response["error"]; ok {
			return e, true
		}
		return v.FunctionResponse.Response["output"], false
	}
	return "", false
}

func (r *Reply) errCode() fault.Code {
	if r.Err == nil {
		return "\x00"
	}
	return r.Err.Code
}

func TestCallInEveryFormat(t *testing.T) {
	s, _ := fixture(t)
	for _, f := range callFormats {
		l := newLoop(t, s, f, nil)
		r, err := l.Call(context.Background(), []byte(callIn(f, "call_7", "read_file", `{"path":"a.txt"}`)))
		if err != nil {
			t.Fatal(err)
		}
		text, isErr := resultText(t, f, r)
		if isErr || r.Err != nil || !strings.Contains(text, "beta") || r.ID != "call_7" || r.Name != "read_file" {
			t.Errorf("%s: %s %v %+v", f, text, isErr, r)
		}
		if !strings.Contains(string(r.Result), "call_7") {
			t.Errorf("%s: the result does not answer the call's id: %s", f, r.Result)
		}
		// A refusal is a result the model reads, with the code: b.txt
		// was not read.
		r, err = l.Call(context.Background(), []byte(callIn(f, "call_8", "edit_file", `{"path":"b.txt","old_string":"gamma","new_string":"y"}`)))
		if err != nil {
			t.Fatal(err)
		}
		if text, isErr := resultText(t, f, r); !isErr || r.Err == nil || !strings.HasPrefix(text, "conflict: ") {
			t.Errorf("%s: edit before read: %s %v", f, text, isErr)
		}
	}
}

func TestImageResults(t *testing.T) {
	s, _ := fixture(t)
	for _, f := range callFormats {
		r, err := newLoop(t, s, f, nil).Call(context.Background(), []byte(callIn(f, "c1", "read_file", `{"path":"dot.png"}`)))
		if err != nil || r.Err != nil {
			t.Fatal(err, r.Err)
		}
		all := string(r.Result) + string(r.Extra)
		want := map[Format]string{
			Anthropic:       `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR`,
			OpenAI:          `"image_url":{"url":"data:image/png;base64,iVBOR`,
			OpenAIResponses: `{"type":"input_image","image_url":"data:image/png;base64,iVBOR`,
			Gemini:          `{"inlineData":{"mimeType":"image/png","data":"iVBOR`,
		}[f]
		if !strings.Contains(all, want) {
			t.Errorf("%s: no image in %s", f, all)
		}
		if (r.Extra != nil) != (f == OpenAI || f == Gemini) {
			t.Errorf("%s: extra %s", f, r.Extra)
		}
	}
}

// TestMalformedCallsChangeNothing: a call that is not the format's shape,
// arguments that are not a JSON object, and an unknown tool fail with
// invalid_input, and the file a well-formed call would write is unchanged.
func TestMalformedCallsChangeNothing(t *testing.T) {
	s, root := fixture(t)
	write := `{"path":"a.txt","content":"overwritten"}`
	for _, f := range callFormats {
		l := newLoop(t, s, f, nil)
		good := callIn(f, "c1", "write_file", write)
		shape := []string{`[1]`, `"x"`, `{"name":`, `{}`, strings.Replace(good, `"write_file"`, `""`, 1), strings.Replace(good, `"name"`, `"name","name":"x"`, 1)}
		if f != Gemini {
			shape = append(shape, strings.Replace(good, `"c1"`, `""`, 1))
		}
		switch f {
		case Anthropic:
			shape = append(shape, strings.Replace(good, `"tool_use"`, `"text"`, 1))
		case OpenAI:
			shape = append(shape, strings.Replace(good, `"type":"function"`, `"type":"custom"`, 1))
		case OpenAIResponses:
			shape = append(shape, strings.Replace(good, `"function_call"`, `"function_call_output"`, 1))
		}
		for _, c := range shape {
			r, err := l.Call(context.Background(), []byte(c))
			if r != nil || fault.CodeOf(err) != fault.InvalidInput || !errors.Is(err, ErrShape) {
				t.Errorf("%s: %s: %+v, %v", f, c, r, err)
			}
		}
		var args []string
		switch f {
		case OpenAI, OpenAIResponses:
			args = []string{`{"path":`, `[1]`, `"a.txt"`, `{"path":"a.txt","path":"b"}`}
		default:
			args = []string{`[1]`, `"a.txt"`, `12`}
		}
		for _, a := range args {
			c := callIn(f, "c2", "write_file", a)
			if f == OpenAI || f == OpenAIResponses {
				c = strings.Replace(callIn(f, "c2", "write_file", "{}"), `"{}"`, strconvQuote(a), 1)
			}
			r, err := l.Call(context.Background(), []byte(c))
			if err != nil {
				t.Fatalf("%s %s: %v", f, a, err)
			}
			if fault.CodeOf(r.Err) != fault.InvalidInput {
				t.Errorf("%s: arguments %s: %v", f, a, r.Err)
			}
			if text, isErr := resultText(t, f, r); !isErr || !strings.HasPrefix(text, "invalid_input: ") {
				t.Errorf("%s: arguments %s: result %s", f, a, r.Result)
			}
		}
		r, err := l.Call(context.Background(), []byte(callIn(f, "c3", "rm_rf", `{}`)))
		if err != nil || fault.CodeOf(r.Err) != fault.InvalidInput || !strings.Contains(r.Err.Error(), `unknown tool "rm_rf"`) {
			t.Errorf("%s: unknown tool: %+v %v", f, r, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "alpha\nbeta\n" {
		t.Fatalf("a.txt changed: %q", b)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestToolSearchOnEveryRoute: a search through a loop's Call activates
// tools for the session, and the loop's next specs list them.
func TestToolSearchOnEveryRoute(t *testing.T) {
	for _, f := range callFormats {
		s, _ := fixture(t)
		l := newLoop(t, s, f, &Options{Strict: true})
		has := func(name string) bool {
			specs, err := l.Specs()
			if err != nil {
				t.Fatal(err)
			}
			if err := toolrules.Check(string(f), definitionsOf(specs)); err != nil {
				t.Error(err)
			}
			for _, sp := range specs {
				if sp.Name == name {
					return true
				}
			}
			return false
		}
		if has("move_file") {
			t.Fatalf("%s: move_file listed before any search", f)
		}
		r, err := l.Call(context.Background(), []byte(callIn(f, "s1", "tool_search", `{"query":"move rename file"}`)))
		if err != nil || r.Err != nil {
			t.Fatal(err, r.Err)
		}
		if text, _ := resultText(t, f, r); !strings.Contains(text, "move_file") {
			t.Errorf("%s: the search found %s", f, text)
		}
		if !has("move_file") {
			t.Errorf("%s: move_file not listed after the search", f)
		}
	}
}

func definitionsOf(specs []Spec) []json.RawMessage {
	out := make([]json.RawMessage, len(specs))
	for i, s := range specs {
		out[i] = s.Definition
	}
	return out
}

func TestStrictToolsAndBudget(t *testing.T) {
	s, _ := fixture(t)
	specs, err := newLoop(t, s, Anthropic, &Options{Strict: true, AllGranted: true, StrictTools: []string{"read_file", "grep"}}).Specs()
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range specs {
		if sp.Strict != (sp.Name == "read_file" || sp.Name == "grep") {
			t.Errorf("%s strict %v (%s)", sp.Name, sp.Strict, sp.NotStrict)
		}
		if strings.Contains(string(sp.Definition), `"strict"`) != sp.Strict {
			t.Errorf("%s: %s", sp.Name, sp.Definition)
		}
	}
	var b budget
	for i := range anthropicMaxStrictTools {
		if why := b.admit(budget{tools: 1}); why != "" {
			t.Fatalf("tool %d: %s", i, why)
		}
	}
	if why := b.admit(budget{tools: 1}); why == "" || b.tools != anthropicMaxStrictTools {
		t.Errorf("tool %d admitted", b.tools+1)
	}
	if why := (&budget{optional: anthropicMaxOptional}).admit(budget{tools: 1, optional: 1}); why == "" {
		t.Error("an optional parameter past the budget admitted")
	}
	if why := (&budget{unions: anthropicMaxUnions - 1}).admit(budget{tools: 1, unions: 1}); why != "" {
		t.Errorf("the last union refused: %s", why)
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   map[Format]bool
	}{
		{"read_file", map[Format]bool{MCP: true, Anthropic: true, OpenAI: true, OpenAIResponses: true, Gemini: true}},
		{"srv.tool", map[Format]bool{MCP: true, Gemini: true}},
		{"9lives", map[Format]bool{MCP: true, Anthropic: true, OpenAI: true, OpenAIResponses: true}},
		{strings.Repeat("a", 65), map[Format]bool{MCP: true}},
		{"", nil},
		{"a b", nil},
	} {
		for _, f := range Formats() {
			if got := checkName(c.name, f) == nil; got != c.ok[f] {
				t.Errorf("checkName(%q, %s) ok = %v", c.name, f, got)
			}
		}
	}
	for name, ok := range map[string]bool{"path": true, "_x": true, "-i": false, "9a": false, "a-b": false, strings.Repeat("a", 65): false} {
		if geminiParamName(name) != ok {
			t.Errorf("geminiParamName(%q) != %v", name, ok)
		}
	}
}

func TestGeminiSubset(t *testing.T) {
	g := &geminizer{root: nil, inlining: map[*jsonschema.Schema]bool{}, seen: map[Change]bool{}}
	in := schema(t, `{"type":"object","properties":{"a":{"type":["null","array"],"items":{"type":"string","enum":["x","y"]}},"n":{"type":"integer","exclusiveMinimum":0,"format":"int64"},"c":{"const":"k"},"m":{"enum":[1,2]}},"required":["n"],"additionalProperties":false}`)
	g.root = in
	out := g.node(in, "")
	b, _ := json.Marshal(out)
	want := `{"type":"OBJECT","properties":{"a":{"type":"ARRAY","nullable":true,"items":{"type":"STRING","enum":["x","y"]}},"c":{"type":"STRING","enum":["k"]},"m":{"type":"INTEGER","description":"{\"enum\":[1,2]}"},"n":{"type":"INTEGER","format":"int64","description":"{\"exclusiveMinimum\":0}"}},"required":["n"],"propertyOrdering":["a","c","m","n"]}`
	if string(b) != want || g.whole != nil {
		t.Errorf("gemini\n%s\nwant\n%s (%v)", b, want, g.whole)
	}
	for doc, why := range map[string]string{
		`{"type":"object","properties":{"n":{"$ref":"#"}}}`:                        "$ref",
		`{"type":"object","properties":{"-i":{"type":"boolean"}}}`:                 "properties",
		`{"type":"object","properties":{"v":{"type":["string","integer"]}}}`:       "type",
		`{"type":"object","properties":{"v":{}}}`:                                  "type",
		`{"type":"object","properties":{"v":{"type":"0"}}}`:                        "type",
		`{"type":"object","properties":{"t":{"type":"array","prefixItems":[{}]}}}`: "prefixItems",
	} {
		s := schema(t, doc)
		g := &geminizer{root: s, inlining: map[*jsonschema.Schema]bool{}, seen: map[Change]bool{}}
		g.node(s, "")
		if g.whole == nil || g.whole.Keyword != why {
			t.Errorf("%s: whole %+v, want for %s", doc, g.whole, why)
		}
	}
}

// TestFailureDetailInEveryFormat: a failure with content (a command's
// output before its deadline) reaches the model in each format after the
// fault's line, as an MCP client reads it.
func TestFailureDetailInEveryFormat(t *testing.T) {
	const detail = "--- stdout ---\nprinted before the deadline\n"
	b := kernel.NewBuilder(nil)
	if err := kernel.AddTool(b, kernel.Policy{Name: "slow_command"}, kernel.Meta{Effect: capability.ReadFile, Description: "Fails with output."},
		func(_ context.Context, _ *kernel.Call, _ struct{}) (struct{}, error) {
			return struct{}{}, fault.New(fault.Limit, "the command ran past its time limit").WithDetail(detail)
		}); err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	s := testkit.Session(t, rt, testkit.Grant(t, []string{testkit.TempDir(t)}, capability.ReadFile))
	for _, f := range callFormats {
		r, err := newLoop(t, s, f, nil).Call(context.Background(), []byte(callIn(f, "c1", "slow_command", `{}`)))
		if err != nil {
			t.Fatal(err)
		}
		if text, isErr := resultText(t, f, r); !isErr || text != "limit: the command ran past its time limit\n"+detail {
			t.Errorf("%s: %q %v", f, text, isErr)
		}
	}
}
