package jsonvalid

import (
	"encoding/json"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/jsonschema-go/jsonschema"
)

type args struct {
	Path    string   `json:"path" jsonschema:"a path"`
	Offset  int      `json:"offset,omitempty"`
	Ratio   float64  `json:"ratio,omitempty"`
	Literal bool     `json:"literal,omitempty"`
	Tags    []string `json:"tags,omitempty"`
	Inner   *struct {
		A string `json:"a"`
	} `json:"inner,omitempty"`
	Any map[string]any `json:"any,omitempty"`
}

func schemas(t testing.TB) map[string]*jsonschema.Schema {
	inferred, err := jsonschema.For[args](nil)
	if err != nil {
		t.Fatal(err)
	}
	var custom jsonschema.Schema
	if err := json.Unmarshal([]byte(`{
		"type":"object","required":["mode","n"],"additionalProperties":false,
		"properties":{
			"mode":{"type":"string","enum":["fast","slow"]},
			"n":{"type":"integer","minimum":1,"maximum":10},
			"x":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1},
			"name":{"type":"string","minLength":2,"maxLength":4,"pattern":"^[a-zé]+$"},
			"list":{"type":"array","items":{"type":["string","null"]},"minItems":1,"maxItems":2},
			"free":{}
		}}`), &custom); err != nil {
		t.Fatal(err)
	}
	return map[string]*jsonschema.Schema{"inferred": inferred, "custom": &custom}
}

func TestValidate(t *testing.T) {
	ss := schemas(t)
	cases := []struct {
		schema, in string
		ok         bool
	}{
		{"inferred", `{"path":"a"}`, true},
		{"inferred", `{"path":"a","offset":3,"ratio":0.5,"literal":true,"tags":["x"],"inner":{"a":"b"},"any":{"k":[1,{"z":null}]}}`, true},
		{"inferred", `{}`, false},
		{"inferred", `{"path":1}`, false},
		{"inferred", `{"path":null}`, false},
		{"inferred", `{"path":"a","offset":1.5}`, false},
		{"inferred", `{"path":"a","offset":2.0}`, true},
		{"inferred", `{"path":"a","bogus":1}`, false},
		{"inferred", `{"path":"a","path":"b"}`, false},
		{"inferred", `{"path":"a","inner":{}}`, false},
		{"inferred", `{"path":"a"} {}`, false},
		{"inferred", `{"path":"a"`, false},
		{"inferred", `{"pa\u0074h":"a"}`, true},
		{"inferred", "{\"path\":\"\xff\"}", false},
		{"inferred", `[]`, false},
		{"inferred", `{"path":"a","offset":1e400}`, false},
		{"custom", `{"mode":"fast","n":1}`, true},
		{"custom", `{"mode":"quick","n":1}`, false},
		{"custom", `{"mode":"fast","n":0}`, false},
		{"custom", `{"mode":"fast","n":11}`, false},
		{"custom", `{"mode":"fast","n":10,"x":0.5}`, true},
		{"custom", `{"mode":"fast","n":10,"x":0}`, false},
		{"custom", `{"mode":"fast","n":10,"x":1}`, false},
		{"custom", `{"mode":"fast","n":1,"name":"é"}`, false},
		{"custom", `{"mode":"fast","n":1,"name":"éé"}`, true},
		{"custom", `{"mode":"fast","n":1,"name":"abcde"}`, false},
		{"custom", `{"mode":"fast","n":1,"name":"AB"}`, false},
		{"custom", `{"mode":"fast","n":1,"list":[]}`, false},
		{"custom", `{"mode":"fast","n":1,"list":["a",null]}`, true},
		{"custom", `{"mode":"fast","n":1,"list":["a",1]}`, false},
		{"custom", `{"mode":"fast","n":1,"list":["a","b","c"]}`, false},
		{"custom", `{"mode":"fast","n":1,"free":{"deep":[[[]]]}}`, true},
	}
	for _, c := range cases {
		t.Run(c.schema+" "+c.in, func(t *testing.T) {
			v, ok := Compile(ss[c.schema])
			if !ok {
				t.Fatal("schema did not compile")
			}
			err := v.Validate([]byte(c.in))
			if (err == nil) != c.ok {
				t.Fatalf("Validate = %v, want ok=%v", err, c.ok)
			}
			if want := reference(t, ss[c.schema], []byte(c.in)); want != c.ok {
				t.Fatalf("the table disagrees with jsonschema-go (%v)", want)
			}
		})
	}
}

func TestErrorPointer(t *testing.T) {
	v, _ := Compile(schemas(t)["custom"])
	err := v.Validate([]byte(`{"mode":"fast","n":1,"list":["a",1]}`))
	if e, ok := err.(*Error); !ok || e.Pointer != "/list/1" {
		t.Fatalf("err = %#v", err)
	}
}

func TestUnsupportedFallsBack(t *testing.T) {
	for _, s := range []string{`{"anyOf":[{"type":"string"}]}`, `{"$ref":"#/x"}`, `{"const":1}`, `{"type":"object","properties":{"a":{"not":{"type":"string"}}}}`} {
		var sc jsonschema.Schema
		if err := json.Unmarshal([]byte(s), &sc); err != nil {
			t.Fatal(err)
		}
		if _, ok := Compile(&sc); ok {
			t.Errorf("%s compiled", s)
		}
	}
}

// reference is jsonschema-go's verdict on data, with duplicate names
// rejected as the kernel does before validating.
func reference(t testing.TB, s *jsonschema.Schema, data []byte) bool {
	var v any
	if err := jsonv2.Unmarshal(data, &v); err != nil {
		return false
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs.Validate(v) == nil
}

func FuzzDifferential(f *testing.F) {
	for _, s := range []string{`{"path":"a"}`, `{"mode":"fast","n":3,"list":[null]}`, `{"path":"a","inner":{"a":"b"},"tags":[]}`, `{"x":0.25,"mode":"slow","n":2}`, `[1]`, `{`} {
		f.Add(s)
	}
	ss := schemas(f)
	vs := map[string]*Validator{}
	for name, s := range ss {
		vs[name], _ = Compile(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for name, v := range vs {
			got := v.Validate([]byte(in)) == nil
			if want := reference(t, ss[name], []byte(in)); got != want {
				t.Fatalf("%s: Validate(%q) ok=%v, jsonschema-go ok=%v", name, in, got, want)
			}
		}
	})
}

func BenchmarkValidate(b *testing.B) {
	v, _ := Compile(schemas(b)["inferred"])
	data := []byte(`{"path":"src/main.go","offset":10,"tags":["a","b"]}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONSchemaGo(b *testing.B) {
	s := schemas(b)["inferred"]
	rs, _ := s.Resolve(nil)
	data := []byte(`{"path":"src/main.go","offset":10,"tags":["a","b"]}`)
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := jsonv2.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
		if err := rs.Validate(v); err != nil {
			b.Fatal(err)
		}
	}
}
