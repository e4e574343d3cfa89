package tabular

import (
	"compress/gzip"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
)

func newSession(t *testing.T, opts *ToolOptions, effects ...capability.Effect) *kernel.Session {
	t.Helper()
	return testkit.ToolSession(t, RegisterTools, opts, []string{"/srv/data"}, effects...)
}

func TestCSVScanTool(t *testing.T) {
	people := fixture(t, "comma.csv")
	files := testkit.Files{
		"people.csv":    people,
		"people.csv.gz": gzipped(t, gzip.DefaultCompression, people),
		"people.zip":    zipped(t, "", member{name: "people.csv", data: people}),
		"two.zip":       zipped(t, "", member{name: "a.csv", data: people}, member{name: "b.csv", data: people}),
		"wide.csv":      []byte(header(300) + "\n"),
		"big.csv":       []byte("v\n" + strings.Repeat("abcdefghij\n", 1000)),
	}
	s := newSession(t, &ToolOptions{Files: files, MaxOutputBytes: 8192}, capability.Parse, capability.ReadFile)
	noRead := newSession(t, &ToolOptions{Files: files}, capability.Parse)
	noFiles := newSession(t, nil, capability.Parse, capability.ReadFile)
	ca := []any{map[string]any{"column": "state", "value": "CA"}}
	cases := []struct {
		name    string
		s       *kernel.Session
		args    map[string]any
		code    fault.Code
		text    []string
		struct_ string
	}{
		{"path filter projection", s, map[string]any{"path": "people.csv", "columns": []string{"name"}, "filter": ca}, "",
			[]string{"rows scanned 3, matched 2, skipped 0, returned 2", "[\"name\"]\n[\"Ann\"]\n[\"Cy\"]\n"}, `"rows_matched":2`},
		{"gzip", s, map[string]any{"path": "people.csv.gz", "columns": []string{"id"}}, "", []string{"gzip (comma)", "[\"3\"]"}, `"format":"gzip"`},
		{"zip", s, map[string]any{"path": "people.zip", "max_rows": 1}, "",
			[]string{"TRUNCATED by the row budget: 2 matched rows not returned, the next is data row 2 (line 3); pass offset 1 to continue", "[\"1\",\"Ann\",\"CA\"]"}, `"truncated":true`},
		{"continue with offset", s, map[string]any{"path": "people.zip", "max_rows": 1, "offset": 1}, "", []string{"skipped 1, returned 1", "[\"2\",\"Bob\",\"NY\"]"}, `"offset":2`},
		{"inline text pipe", s, map[string]any{"text": "a|b\n1|2\n", "dialect": "pipe"}, "", []string{"csv (pipe)", "[\"1\",\"2\"]"}, ""},
		{"inline gzip refused", s, map[string]any{"text": "a\n", "format": "gzip"}, fault.InvalidInput, []string{"must come from a file"}, ""},
		{"bad dialect", s, map[string]any{"text": "a\n", "dialect": "semicolon"}, fault.InvalidInput, nil, ""},
		{"zip of two", s, map[string]any{"path": "two.zip"}, fault.InvalidInput, []string{"exactly one CSV"}, ""},
		{"300 columns", s, map[string]any{"path": "wide.csv"}, fault.Limit, []string{"columns"}, ""},
		{"output over the limit", s, map[string]any{"path": "big.csv"}, "", []string{"a WINDOW of the rows that fit the output bound", "pass offset"}, `"window":true`},
		{"output within the limit with max_rows", s, map[string]any{"path": "big.csv", "max_rows": 100}, "", []string{"returned 100; TRUNCATED"}, ""},
		{"both", s, map[string]any{"path": "people.csv", "text": "a\n"}, fault.InvalidInput, nil, ""},
		{"no read_file", noRead, map[string]any{"path": "people.csv"}, fault.Denied, nil, ""},
		{"no reader", noFiles, map[string]any{"path": "people.csv"}, fault.Denied, nil, ""},
		{"unknown filter member", s, map[string]any{"text": "a\n1\n", "filter": []any{map[string]any{"column": "a", "value": "1", "regex": "x"}}}, fault.InvalidInput, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := testkit.Call(t, c.s, "csv_scan", c.args)
			if fault.CodeOf(err) != c.code {
				t.Fatalf("err %v, want code %q", err, c.code)
			}
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = res.Text
				if !strings.Contains(string(res.Structured), c.struct_) {
					t.Fatalf("structured %s lacks %s", res.Structured, c.struct_)
				}
				if strings.Contains(string(res.Structured), `"rows"`) {
					t.Fatalf("rows sent twice: %s", res.Structured)
				}
			}
			for _, want := range c.text {
				if !strings.Contains(got, want) {
					t.Fatalf("%q lacks %q", got, want)
				}
			}
		})
	}
}

func TestCSVScanCatalog(t *testing.T) {
	s := newSession(t, nil, capability.Parse)
	e, _, ok := s.Runtime().Catalog().Lookup("csv_scan")
	if !ok || e.Effect != capability.Parse || e.Hot || !strings.Contains(e.Description, "Example:") {
		t.Fatalf("%+v", e)
	}
	in, _, err := e.SchemaJSON()
	if err != nil {
		t.Fatal(err)
	}
	schema := string(in)
	for _, p := range []string{`"path"`, `"text"`, `"columns"`, `"filter"`, `"max_rows"`, `"offset"`, `"max_scan_rows"`, `"dialect"`, `"format"`, `"op"`} {
		if !strings.Contains(schema, p) {
			t.Fatalf("schema lacks %s: %s", p, schema)
		}
	}
}
