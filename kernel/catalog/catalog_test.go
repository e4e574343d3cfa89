package catalog

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/capability"
)

func obj() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"path": {Type: "string"}}}
}

func entries() []Entry {
	mk := func(name string, e capability.Effect, hot bool, summary string) Entry {
		return Entry{Name: name, Effect: e, Hot: hot, Summary: summary, Description: summary + ".", InputSchema: obj()}
	}
	return []Entry{
		mk("read_file", capability.ReadFile, true, "Read a text file"),
		mk("write_file", capability.WriteFile, true, "Write a text file"),
		mk("move_file", capability.MoveFile, false, "Move or rename a file"),
		mk("grep", capability.Search, true, "Search file contents with a regular expression"),
		mk("run_shell", capability.RunShell, false, "Run a shell command"),
		mk("tool_search", capability.ToolSearch, true, "Find tools"),
	}
}

func names(es []*Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name)
	}
	return strings.Join(out, ",")
}

func set(effects ...capability.Effect) capability.Set {
	c, _ := capability.New("a", effects, capability.Scope{})
	return capability.Set{c}
}

func TestNewValidates(t *testing.T) {
	bad := []struct {
		name string
		edit func(*Entry)
	}{
		{"bad name", func(e *Entry) { e.Name = "Read-File" }},
		{"empty name", func(e *Entry) { e.Name = "" }},
		{"unknown effect", func(e *Entry) { e.Effect = "fly" }},
		{"no description", func(e *Entry) { e.Description = " " }},
		{"no schema", func(e *Entry) { e.InputSchema = nil }},
		{"non-object schema", func(e *Entry) { e.InputSchema = &jsonschema.Schema{Type: "string"} }},
		{"bad output schema", func(e *Entry) { e.OutputSchema = &jsonschema.Schema{Type: "array"} }},
		{"name too long", func(e *Entry) { e.Name = "a" + strings.Repeat("b", 64) }},
		{"name of a digit", func(e *Entry) { e.Name = "1a" }},
		{"given and inferred", func(e *Entry) {
			e.Infer = func() (_, _ *jsonschema.Schema, err error) { return obj(), nil, nil }
		}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			es := entries()
			c.edit(&es[0])
			if _, err := New(es); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	es := entries()
	es = append(es, es[1])
	if _, err := New(es); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("duplicate: %v", err)
	}
}

// A schema that does not resolve is caught when the tool is first listed
// or called, and by Check, never taken as valid.
func TestUnresolvableSchema(t *testing.T) {
	broken := map[string]func(*Entry){
		"dangling ref": func(e *Entry) {
			e.InputSchema = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"x": {Ref: "#/nowhere"}}}
		},
		"bad pattern": func(e *Entry) {
			e.InputSchema = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"x": {Type: "string", Pattern: "("}}}
		},
		"type and types": func(e *Entry) {
			e.InputSchema = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"x": {Type: "string", Types: []string{"null", "string"}}}}
		},
		"output ref": func(e *Entry) {
			e.OutputSchema = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"x": {Ref: "#/nowhere"}}}
		},
		"inference fails": func(e *Entry) {
			e.InputSchema = nil
			e.Infer = func() (_, _ *jsonschema.Schema, err error) { return nil, nil, errors.New("unsupported type chan int") }
		},
		"inferred non-object": func(e *Entry) {
			e.InputSchema = nil
			e.Infer = func() (_, _ *jsonschema.Schema, err error) { return &jsonschema.Schema{Type: "string"}, nil, nil }
		},
		"inferred output non-object": func(e *Entry) {
			e.InputSchema = nil
			e.Infer = func() (_, _ *jsonschema.Schema, err error) { return obj(), &jsonschema.Schema{Type: "array"}, nil }
		},
	}
	for name, edit := range broken {
		t.Run(name, func(t *testing.T) {
			es := entries()
			edit(&es[0])
			c, err := New(es)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Check(); !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), `"read_file"`) {
				t.Errorf("Check: %v", err)
			}
			e, _, _ := c.Lookup("read_file")
			if _, _, err := e.Schemas(); !errors.Is(err, ErrSchema) {
				t.Errorf("Schemas: %v", err)
			}
			if in, out, err := e.SchemaJSON(); !errors.Is(err, ErrSchema) || in != nil || out != nil {
				t.Errorf("SchemaJSON: %s %s %v", in, out, err)
			}
			if err := e.ValidateArgs([]byte(`{"x": "a"}`)); !errors.Is(err, ErrSchema) {
				t.Errorf("ValidateArgs: %v", err)
			}
			other, _, _ := c.Lookup("write_file")
			if err := other.ValidateArgs([]byte(`{"path": "a"}`)); err != nil {
				t.Errorf("another tool: %v", err)
			}
		})
	}
	c, err := New(entries())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(); err != nil {
		t.Fatalf("Check of sound schemas: %v", err)
	}
	for _, e := range c.Entries() {
		if _, _, err := e.Schemas(); err != nil {
			t.Errorf("%s: %v", e.Name, err)
		}
	}
}

// Inferred schemas are made once, on first use, and then read like given
// ones.
func TestInferredSchemas(t *testing.T) {
	es := entries()
	calls := 0
	es[0].InputSchema = nil
	es[0].Infer = func() (_, _ *jsonschema.Schema, err error) {
		calls++
		return obj(), &jsonschema.Schema{Type: "object"}, nil
	}
	c, err := New(es)
	if err != nil || calls != 0 {
		t.Fatalf("New: %v, inferred %d times", err, calls)
	}
	e, _, _ := c.Lookup("read_file")
	if err := e.ValidateArgs([]byte(`{"path": 1}`)); err == nil || errors.Is(err, ErrSchema) {
		t.Errorf("a number for a string: %v", err)
	}
	in, out, err := e.Schemas()
	if err != nil || in.Properties["path"] == nil || out == nil {
		t.Errorf("Schemas: %v %v %v", in, out, err)
	}
	if inJSON, outJSON, err := e.SchemaJSON(); err != nil || !strings.Contains(string(inJSON), `"path"`) || string(outJSON) != `{"type":"object"}` {
		t.Errorf("SchemaJSON: %s %s %v", inJSON, outJSON, err)
	}
	if calls != 1 {
		t.Errorf("inferred %d times", calls)
	}
}

func TestViews(t *testing.T) {
	c, err := New(entries())
	if err != nil {
		t.Fatal(err)
	}
	readOnly := set(capability.ReadFile, capability.Search, capability.ToolSearch)
	if got := names(c.SpecsFor(readOnly)); got != "read_file,grep,tool_search" {
		t.Errorf("SpecsFor = %s", got)
	}
	if got := names(c.SpecsFor(nil)); got != "" {
		t.Errorf("no capabilities must mean no tools: %s", got)
	}
	withMove := set(capability.ReadFile, capability.MoveFile, capability.ToolSearch)
	if got := names(c.DeferredSpecsFor(withMove, nil)); got != "read_file,tool_search" {
		t.Errorf("deferred = %s", got)
	}
	act := func(n string) bool { return n == "move_file" || n == "run_shell" }
	if got := names(c.DeferredSpecsFor(withMove, act)); got != "read_file,move_file,tool_search" {
		t.Errorf("activated = %s (activation must never grant run_shell)", got)
	}
	// Same capabilities, same list: derivation depends on nothing else.
	if names(c.SpecsFor(readOnly)) != names(c.SpecsFor(slices.Clone(readOnly))) {
		t.Error("spec derivation is not a function of the capability set")
	}
}

func TestSearch(t *testing.T) {
	c, _ := New(entries())
	all := set(capability.ReadFile, capability.WriteFile, capability.MoveFile, capability.Search, capability.RunShell, capability.ToolSearch)
	cases := []struct {
		query string
		limit int
		want  string
	}{
		{"move", 5, "move_file"},
		{"file", 5, "move_file,read_file,write_file,grep"},
		{"rename file", 2, "move_file,read_file"},
		{"GREP", 5, "grep"},
		{"", 3, "grep,move_file,read_file"},
		{"", 0, "grep"},
		{"", 100, "grep,move_file,read_file,run_shell,write_file"},
		{"tools find", 5, ""},
		{"nothing-matches", 5, ""},
		// Whole words only: "x" is inside "text" and "expression", "ead"
		// inside "read"; neither is a word of any tool.
		{"x", 12, ""},
		{"ead", 12, ""},
		{"files", 5, "move_file,read_file,write_file,grep"},
		{"read_file", 1, "read_file"},
		{"grep", 5, "grep"},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			if got := names(c.Search(all, tc.query, tc.limit, nil)); got != tc.want {
				t.Errorf("Search(%q, %d) = %s, want %s", tc.query, tc.limit, got, tc.want)
			}
		})
	}
	if got := names(c.Search(set(capability.ReadFile), "shell", 5, nil)); got != "" {
		t.Errorf("search found an ungranted tool: %s", got)
	}
}

func TestSearchClampsToTwelve(t *testing.T) {
	var es []Entry
	for i := range 20 {
		es = append(es, Entry{Name: "tool_" + string(rune('a'+i)), Effect: capability.ReadFile, Description: "a tool", InputSchema: obj()})
	}
	c, _ := New(es)
	if n := len(c.Search(set(capability.ReadFile), "tool", 13, nil)); n != 12 {
		t.Fatalf("13 asked, %d returned; the limit is 12", n)
	}
	if n := len(c.Search(set(capability.ReadFile), "tool", 12, nil)); n != 12 {
		t.Fatalf("12 asked, %d returned", n)
	}
}

func TestHintsAndSchemas(t *testing.T) {
	c, _ := New(entries())
	e, _, _ := c.Lookup("write_file")
	if h := e.Hints(); h.ReadOnly || !h.Destructive {
		t.Errorf("write_file hints %+v", h)
	}
	r, _, _ := c.Lookup("read_file")
	if h := r.Hints(); !h.ReadOnly || h.Destructive || !h.Idempotent {
		t.Errorf("read_file hints %+v", h)
	}
	if in, out, err := r.SchemaJSON(); err != nil || !strings.Contains(string(in), `"path"`) || out != nil {
		t.Errorf("schema JSON %s, %s, %v", in, out, err)
	}
	if err := r.ValidateArgs([]byte(`{"path":1}`)); err == nil {
		t.Error("type error accepted")
	}
	if _, _, ok := c.Lookup("nope"); ok {
		t.Error("lookup of an unknown name")
	}
}

func TestTitles(t *testing.T) {
	c, err := New([]Entry{
		{Name: "zip_list", Effect: capability.ReadFile, Description: "d", InputSchema: obj()},
		{Name: "read_file", Annotations: &Annotations{Title: "Read file"}, Effect: capability.ReadFile, Description: "d", InputSchema: obj()},
		{Name: "grep", Annotations: &Annotations{ReadOnly: true}, Effect: capability.ReadFile, Description: "d", InputSchema: obj()},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"zip_list": "Zip list", "read_file": "Read file", "grep": "Grep"} {
		if e, _, _ := c.Lookup(name); e.Hints().Title != want {
			t.Errorf("%s: title %q, want %q", name, e.Hints().Title, want)
		}
	}
}

// TestListedSchemas: the schemas a client is given leave out
// "additionalProperties": false, null in an argument's type list and an
// output's required list; the schemas that validate keep them.
func TestListedSchemas(t *testing.T) {
	type edit struct {
		Old string `json:"old"`
	}
	type args struct {
		Path  string `json:"path"`
		Edits []edit `json:"edits,omitempty"`
	}
	type result struct {
		Path  string   `json:"path"`
		Names []string `json:"names"`
	}
	es := entries()
	es[0].InputSchema = nil
	es[0].Infer = func() (in, out *jsonschema.Schema, err error) {
		if in, err = jsonschema.For[args](nil); err != nil {
			return nil, nil, err
		}
		out, err = jsonschema.For[result](nil)
		return in, out, err
	}
	c, err := New(es)
	if err != nil {
		t.Fatal(err)
	}
	e, _, _ := c.Lookup("read_file")
	in, out, err := e.SchemaJSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"object","properties":{"path":{"type":"string"},"edits":{"type":"array","items":{"type":"object","properties":{"old":{"type":"string"}},"required":["old"]}}},"required":["path"]}`; string(in) != want {
		t.Errorf("listed input\n%s\nwant\n%s", in, want)
	}
	if want := `{"type":"object","properties":{"path":{"type":"string"},"names":{"type":["null","array"],"items":{"type":"string"}}}}`; string(out) != want {
		t.Errorf("listed output\n%s\nwant\n%s", out, want)
	}
	if err := e.ValidateArgs([]byte(`{"path": "a", "extra": 1}`)); err == nil {
		t.Error("an unknown argument was accepted")
	}
	if err := e.ValidateOutput([]byte(`{"path": "a"}`)); err == nil {
		t.Error("a result without a required field was accepted")
	}
	if vin, _, _ := e.Schemas(); vin.AdditionalProperties == nil {
		t.Error("the validating schema lost additionalProperties")
	}
}
