package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/limits"
)

// TestTypeScriptClientWindows: results past a tool's output bound reach a
// TypeScript SDK client as windows that pass its output-schema check, and
// the next offset each names, passed back, reaches the end: csv_scan rows
// under the default bound, html_extract lines under a bound capkit.toml
// lowers for that tool alone, and grep under [tool.grep] max_output_bytes
// = 2000 with 127 short matching lines in 3 files (which showed none of
// them and no next offset).
func TestTypeScriptClientWindows(t *testing.T) {
	modules := nodeModules(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var csv, html strings.Builder
	csv.WriteString("id,text\n")
	for i := 0; int64(csv.Len()) < 3*limits.DefaultMaxOutputBytes; i++ {
		fmt.Fprintf(&csv, "%d,%s\n", i, strings.Repeat("wörds ", 10+i%20))
	}
	html.WriteString("<html><head><title>t</title></head><body>")
	for i := range 200 {
		fmt.Fprintf(&html, "<p>paragraph %d %s</p>", i, strings.Repeat("text ", i%15))
	}
	html.WriteString("</body></html>")
	mkfile(t, filepath.Join(dir, "rw", "big.csv"), csv.String())
	mkfile(t, filepath.Join(dir, "rw", "page.html"), html.String())
	for f, n := range []int{40, 43, 44} {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "TODO item %d\n", i)
		}
		mkfile(t, filepath.Join(dir, "rw", "todo", fmt.Sprintf("f%d.txt", f)), b.String())
	}
	cfg := filepath.Join(dir, "capkit.toml")
	if err := os.WriteFile(cfg, []byte(`[[root]]
path = "rw"
[actor.assistant]
effects = ["read_file", "parse", "search", "tool_search"]
[tool.grep]
max_output_bytes = 2000
[tool.html_extract]
max_output_bytes = 4096
[tool.json_canonical]
max_output_bytes = 100
`), 0o600); err != nil {
		t.Fatal(err)
	}
	rows := strings.Count(csv.String(), "\n") - 1
	plan := tsPlan{Transport: "stdio", Command: capkit, Args: []string{"--config", cfg, "serve"}, Cwd: dir, Steps: []tsStep{
		{Op: "call", Tool: "tool_search", Args: map[string]any{"query": "csv html canonical", "limit": 12}},
		{Op: "list"},
		{Op: "follow", Tool: "csv_scan", Args: map[string]any{"path": "big.csv", "max_rows": rows}, OffsetArg: "offset", Next: "next_offset"},
		{Op: "follow", Tool: "html_extract", Args: map[string]any{"path": "page.html", "select": "text"}, OffsetArg: "offset", Next: "next_offset"},
		{Op: "call", Tool: "json_canonical", Args: map[string]any{"text": `{"a": "` + strings.Repeat("é", 50) + `"}`}},
		{Op: "follow", Tool: "grep", Args: map[string]any{"pattern": "TODO", "path": "todo"}, OffsetArg: "offset", Next: "next_offset"},
	}}
	out := runTS(t, modules, plan)
	// csv_scan: every window fits the default bound and says it is one;
	// the rows of all of them are the file's rows, in order.
	var got []string
	csvPages := out.Results[2].Pages
	for i, p := range csvPages {
		if p.Thrown != nil || p.IsError {
			t.Fatalf("csv_scan window %d: %+v", i, p)
		}
		if size := int64(len(p.Text) + len(p.Structured)); size > limits.DefaultMaxOutputBytes {
			t.Fatalf("csv_scan window %d: %d bytes", i, size)
		}
		if i < len(csvPages)-1 && !strings.Contains(p.Text, "a WINDOW of the rows that fit the output bound") {
			t.Fatalf("csv_scan window %d does not say it is one: %.300s", i, p.Text)
		}
		for _, line := range strings.Split(strings.TrimSuffix(p.Text, "\n"), "\n")[2:] {
			var row []string
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatal(err)
			}
			got = append(got, strings.Join(row, ","))
		}
	}
	want := strings.Split(strings.TrimSuffix(csv.String(), "\n"), "\n")[1:]
	if len(csvPages) < 3 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("csv_scan: %d windows gave %d rows, want %d", len(csvPages), len(got), len(want))
	}
	// html_extract under its own 4 KiB bound: the windows' lines are the
	// page's text once.
	var text strings.Builder
	htmlPages := out.Results[3].Pages
	for i, p := range htmlPages {
		var span struct {
			Lines      int `json:"lines_shown"`
			NextOffset int `json:"next_offset"`
		}
		if p.Thrown != nil || p.IsError || json.Unmarshal(p.Structured, &span) != nil || len(p.Text)+len(p.Structured) > 4096 {
			t.Fatalf("html_extract window %d: %+v", i, p)
		}
		if span.NextOffset > 0 && !strings.Contains(p.Text, fmt.Sprintf("html_extract with offset=%d", span.NextOffset)) {
			t.Fatalf("html_extract window %d does not name the next offset", i)
		}
		text.WriteString(strings.Join(strings.SplitAfter(p.Text, "\n")[:span.Lines], ""))
	}
	for _, p := range []string{"t\n", "paragraph 0", strings.TrimSpace("paragraph 199 "+strings.Repeat("text ", 199%15)) + "\n"} {
		if !strings.Contains(text.String(), p) {
			t.Fatalf("html_extract windows lack %q", p)
		}
	}
	if len(htmlPages) < 3 || strings.Count(text.String(), "paragraph ") != 200 {
		t.Fatalf("html_extract: %d windows, %d paragraphs", len(htmlPages), strings.Count(text.String(), "paragraph "))
	}
	// Under a bound no window fits, the failure reaches the client as a
	// limit result naming the setting that raises it.
	if r := out.Results[4]; r.Thrown != nil || !r.IsError || !strings.HasPrefix(r.Text, "limit: ") || !strings.Contains(r.Text, "[tool.json_canonical] max_output_bytes") {
		t.Fatalf("json_canonical under 100 bytes: %+v", r)
	}
	// grep under 2000 bytes: windows of whole matching lines, each naming
	// the next offset, that give all 127 once, in order.
	var matches []string
	grepPages := out.Results[5].Pages
	for i, p := range grepPages {
		var r struct {
			Total      int `json:"total"`
			Shown      int `json:"shown"`
			NextOffset int `json:"next_offset"`
		}
		if p.Thrown != nil || p.IsError || json.Unmarshal(p.Structured, &r) != nil || len(p.Text)+len(p.Structured) > 2000 || r.Total != 127 || r.Shown == 0 {
			t.Fatalf("grep window %d: %+v", i, p)
		}
		if r.NextOffset > 0 && !strings.Contains(p.Text, fmt.Sprintf("the next page is offset=%d", r.NextOffset)) {
			t.Fatalf("grep window %d does not name the next offset: %s", i, p.Text)
		}
		matches = append(matches, strings.Split(p.Text, "\n")[:r.Shown]...)
	}
	if len(grepPages) < 3 || len(matches) != 127 || !strings.HasPrefix(matches[0], "todo/f0.txt:1:TODO item 0") || !strings.HasPrefix(matches[126], "todo/f2.txt:44:TODO item 43") {
		t.Fatalf("grep: %d windows gave %d lines: %q", len(grepPages), len(matches), matches)
	}
}
