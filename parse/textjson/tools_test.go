package textjson

import (
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

func newSession(t *testing.T, opts *ToolOptions, effects ...capability.Effect) *kernel.Session {
	t.Helper()
	return testkit.ToolSession(t, RegisterTools, opts, []string{"/srv/data"}, effects...)
}

func TestTools(t *testing.T) {
	files := testkit.Files{
		"ok.json":   []byte(`{"b": 1, "a": [true, 12345678901234567890123]}`),
		"dup.json":  []byte("{\n\"a\": 1,\n\"a\": 2}"),
		"bad.txt":   []byte("ok\n\xff"),
		"notes.txt": []byte("one\ntwo\n"),
		"big.json":  []byte(`"` + strings.Repeat("x", 100) + `"`),
	}
	s := newSession(t, &ToolOptions{Files: files, MaxOutputBytes: 4096}, capability.Parse, capability.ReadFile)
	noRead := newSession(t, &ToolOptions{Files: files}, capability.Parse)
	noFiles := newSession(t, nil, capability.Parse, capability.ReadFile)
	cases := []struct {
		name    string
		s       *kernel.Session
		tool    string
		args    map[string]any
		code    fault.Code
		text    string
		structd string
	}{
		{"validate path", s, "json_validate", map[string]any{"path": "ok.json"}, "", "valid JSON: object, 46 bytes, 5 values, depth 2", `"valid":true`},
		{"validate text", s, "json_validate", map[string]any{"text": `[1,2]`}, "", "valid JSON: array", `"depth":1`},
		{"validate duplicate", s, "json_validate", map[string]any{"path": "dup.json"}, fault.InvalidInput, "line 3, column 1", ""},
		{"validate max_bytes edge", s, "json_validate", map[string]any{"path": "big.json", "max_bytes": 102}, "", "102 bytes", ""},
		{"validate max_bytes past", s, "json_validate", map[string]any{"path": "big.json", "max_bytes": 101}, fault.Limit, "", ""},
		{"validate max_bytes over hard", s, "json_validate", map[string]any{"text": "1", "max_bytes": limits.JSONMaxBytes + 1}, fault.Limit, "", ""},
		{"both path and text", s, "json_validate", map[string]any{"path": "ok.json", "text": "1"}, fault.InvalidInput, "", ""},
		{"neither", s, "json_validate", map[string]any{}, fault.InvalidInput, "", ""},
		{"missing file", s, "json_validate", map[string]any{"path": "nope.json"}, fault.NotFound, "", ""},
		{"path without read_file", noRead, "json_validate", map[string]any{"path": "ok.json"}, fault.Denied, "", ""},
		{"path without reader", noFiles, "json_validate", map[string]any{"path": "ok.json"}, fault.Denied, "", ""},
		{"canonical", s, "json_canonical", map[string]any{"path": "ok.json"}, "", `{"a":[true,12345678901234567890123],"b":1}`, `"canonical_bytes":42`},
		{"canonical past the output bound", s, "json_canonical", map[string]any{"text": `"` + strings.Repeat("y", 5000) + `"`}, "", "the next window is json_canonical with offset=", `"next_offset":`},
		{"text ok", s, "text_validate", map[string]any{"path": "notes.txt"}, "", "8 bytes, 8 characters, 2 lines", `"lines":2`},
		{"text bad utf8", s, "text_validate", map[string]any{"path": "bad.txt"}, fault.InvalidInput, "line 2, column 1 (byte offset 3)", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := testkit.Call(t, c.s, c.tool, c.args)
			if fault.CodeOf(err) != c.code {
				t.Fatalf("err %v, want code %q", err, c.code)
			}
			if err != nil {
				if c.text != "" && !strings.Contains(err.Error(), c.text) {
					t.Fatalf("message %q lacks %q", err, c.text)
				}
				return
			}
			if !strings.Contains(res.Text, c.text) || !strings.Contains(string(res.Structured), c.structd) {
				t.Fatalf("text %q structured %s", res.Text, res.Structured)
			}
			if c.tool == "json_canonical" && strings.Contains(string(res.Structured), "true,") {
				t.Fatalf("canonical text repeated in structured content: %s", res.Structured)
			}
		})
	}
}

func TestToolsCatalog(t *testing.T) {
	s := newSession(t, nil, capability.Parse, capability.ToolSearch)
	cat := s.Runtime().Catalog()
	for _, name := range []string{"text_validate", "json_validate", "json_canonical"} {
		e, _, ok := cat.Lookup(name)
		if !ok || e.Effect != capability.Parse || e.Hot {
			t.Fatalf("%s: %+v", name, e)
		}
		if !strings.Contains(e.Description, "Example:") {
			t.Fatalf("%s: description lacks an example", name)
		}
		in, _, err := e.SchemaJSON()
		if err != nil {
			t.Fatal(err)
		}
		schema := string(in)
		for _, p := range []string{`"path"`, `"text"`, `"max_bytes"`} {
			if !strings.Contains(schema, p) {
				t.Fatalf("%s: schema %s lacks %s", name, schema, p)
			}
		}
	}
}
