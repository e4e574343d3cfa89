package cli

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func docFiles(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestJSONCommands(t *testing.T) {
	dir := docFiles(t, map[string][]byte{
		"ok.json":   []byte(`{"b": 1, "a": [true, 12345678901234567890123]}`),
		"dup.json":  []byte("{\n  \"a\": 1,\n  \"a\": 2\n}"),
		"deep.json": []byte(strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000)),
		"nan.json":  []byte(`[NaN]`),
	})
	p := func(name string) string { return filepath.Join(dir, name) }
	cases := []cmdCase{
		{"valid", "", []string{"json", "validate", p("ok.json")}, 0, "valid JSON: object, 46 bytes, 5 values, depth 2", ""},
		{"valid json output", "", []string{"json", "validate", "--json", p("ok.json")}, 0, `"valid": true`, ""},
		{"stdin", `[1, 2]`, []string{"json", "validate", "-"}, 0, "valid JSON: array", ""},
		{"duplicate", "", []string{"json", "validate", p("dup.json")}, 2, "", "invalid JSON at line 3, column 3 (byte offset 14): duplicate object member name"},
		{"duplicate json error", "", []string{"json", "validate", "--json", p("dup.json")}, 2, `"code": "invalid_input"`, ""},
		{"non-finite", "", []string{"json", "validate", p("nan.json")}, 2, "", "non-finite"},
		{"deep", "", []string{"json", "validate", p("deep.json")}, 6, "", "depth limit"},
		{"max-bytes edge", "", []string{"json", "validate", "--max-bytes", "46", p("ok.json")}, 0, "46 bytes", ""},
		{"max-bytes past", "", []string{"json", "validate", "--max-bytes", "45", p("ok.json")}, 6, "", "limit"},
		{"max-bytes over hard", "", []string{"json", "validate", "--max-bytes", "134217729", p("ok.json")}, 6, "", "limit"},
		{"missing file", "", []string{"json", "validate", p("nope.json")}, 3, "", ""},
		{"directory", "", []string{"json", "validate", dir}, 2, "", "directory"},
		{"no file", "", []string{"json", "validate"}, 2, "", ""},
		{"canonical", "", []string{"json", "canonical", p("ok.json")}, 0, "{\"a\":[true,12345678901234567890123],\"b\":1}\n", ""},
		{"canonical json flag", "", []string{"json", "canonical", "--json", p("ok.json")}, 0, "{\"a\":[true,12345678901234567890123],\"b\":1}\n", ""},
		{"canonical invalid", "", []string{"json", "canonical", p("dup.json")}, 2, "", "duplicate"},
	}
	runCases(t, cases)
}

func TestCSVCommands(t *testing.T) {
	people := []byte("id,name,state\n1,Ann,CA\n2,\"Bob, Jr.\",NY\n3,Cy,CA\n")
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(people)
	w.Close()
	dir := docFiles(t, map[string][]byte{
		"people.csv":    people,
		"people.csv.gz": gz.Bytes(),
		"people.tsv":    []byte("id\tname\n1\tAnn\n"),
		"ragged.csv":    []byte("a,b\n1\n"),
		"wide.csv":      []byte(strings.Repeat("c,", 299) + "c\n"),
	})
	p := func(name string) string { return filepath.Join(dir, name) }
	cases := []cmdCase{
		{"all rows", "", []string{"csv", "scan", p("people.csv")}, 0, "id,name,state\n1,Ann,CA\n2,\"Bob, Jr.\",NY\n3,Cy,CA\n\ncsv (comma), 3 columns: rows scanned 3, matched 3, skipped 0, returned 3\n", ""},
		{"columns and where", "", []string{"csv", "scan", p("people.csv"), "--columns", "name", "--where", "state=CA"}, 0, "name\nAnn\nCy\n\ncsv (comma), 3 columns: rows scanned 3, matched 2", ""},
		{"where differs", "", []string{"csv", "scan", p("people.csv"), "--columns", "id", "--where", "state!=CA"}, 0, "id\n2\n", ""},
		{"max-rows truncation", "", []string{"csv", "scan", p("people.csv"), "--max-rows", "1", "--columns", "id"}, 0, "id\n1\n\ncsv (comma), 3 columns: rows scanned 3, matched 3, skipped 0, returned 1; TRUNCATED by --max-rows: 2 matched rows not printed, the next is data row 2 (line 3); pass --offset 1 to continue\n", ""},
		{"offset", "", []string{"csv", "scan", p("people.csv"), "--max-rows", "1", "--offset", "2", "--columns", "id"}, 0, "id\n3\n\ncsv (comma), 3 columns: rows scanned 3, matched 3, skipped 2, returned 1\n", ""},
		{"gzip", "", []string{"csv", "scan", p("people.csv.gz"), "--columns", "id"}, 0, "id\n1\n2\n3\n\ngzip (comma)", ""},
		{"tab detected", "", []string{"csv", "scan", p("people.tsv")}, 0, "id,name\n1,Ann\n\ncsv (tab)", ""},
		{"explicit dialect", "a|b\n1|2\n", []string{"csv", "scan", "-", "--dialect", "pipe"}, 0, "a,b\n1,2\n\ncsv (pipe)", ""},
		{"rows only", "a|b\n1|2\n", []string{"csv", "scan", "-", "--dialect", "pipe", "--rows-only"}, 0, "a,b\n1,2\n", ""},
		{"json", "", []string{"csv", "scan", "--json", p("people.csv"), "--max-rows", "1"}, 0, `"truncated": true`, ""},
		{"ragged", "", []string{"csv", "scan", p("ragged.csv")}, 2, "", "ragged"},
		{"300 columns", "", []string{"csv", "scan", p("wide.csv")}, 6, "", "columns"},
		{"unknown column", "", []string{"csv", "scan", p("people.csv"), "--columns", "zip"}, 2, "", `column "zip" is not in the header`},
		{"bad where", "", []string{"csv", "scan", p("people.csv"), "--where", "state"}, 2, "", "column=value"},
		{"bad dialect", "", []string{"csv", "scan", p("people.csv"), "--dialect", "semicolon"}, 2, "", "dialect"},
		{"scan budget", "", []string{"csv", "scan", p("people.csv"), "--max-scan-rows", "2"}, 6, "", "scan budget"},
		{"empty stdin", "", []string{"csv", "scan", "-"}, 2, "", "header row is required"},
	}
	runCases(t, cases)
	if _, out, _ := run(t, "a|b\n1|2\n", "csv", "scan", "-", "--dialect", "pipe", "--rows-only"); out != "a,b\n1,2\n" {
		t.Errorf("--rows-only printed %q", out)
	}
}
