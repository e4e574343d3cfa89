package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTypeScriptClientArchive: a TypeScript SDK client, as Claude
// Desktop runs it, lists the tools first (the archive's are deferred: not
// there), finds them with tool_search, keeps a document and a file of its
// root in the archive, searches it and cites the hit exactly, and its
// citation names the part's SHA-256 the search gave.
func TestTypeScriptClientArchive(t *testing.T) {
	modules := nodeModules(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mkfile(t, filepath.Join(dir, "rw", "scan.pdf"), "%PDF-1.7 scanned pages\n")
	if out, err := exec.Command(capkit, "archive", "init", filepath.Join(dir, "archive")).CombinedOutput(); err != nil {
		t.Fatalf("archive init: %v %s", err, out)
	}
	cfg := filepath.Join(dir, "capkit.toml")
	if err := os.WriteFile(cfg, []byte(`[[root]]
path = "rw"
[actor.assistant]
effects = ["read_file", "text_archive_read", "text_archive_write", "tool_search"]
[archive]
root = "archive"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	text := "Minutes, page 3. The heliotrope budget was approved: é\u0301 👋🏽.\r\nEnd of page."
	plan := tsPlan{Transport: "stdio", Command: capkit, Args: []string{"--config", cfg, "serve"}, Cwd: dir, Steps: []tsStep{
		{Op: "list"},
		{Op: "call", Tool: "tool_search", Args: map[string]any{"query": "archive add search cite versions", "limit": 12}},
		{Op: "list"},
		{Op: "call", Tool: "archive_add", Args: map[string]any{"collection": "minutes", "item": "2024-06", "request": "minutes-2024-06",
			"parts": []any{map[string]any{"text": text, "page": "3", "method": "ocr", "warnings": []string{"faint scan"}}}, "title": "June minutes"}},
		{Op: "call", Tool: "archive_add", Args: map[string]any{"collection": "scans", "request": "scan-1", "path": "scan.pdf", "media_type": "application/pdf"}},
		{Op: "call", Tool: "archive_search", Args: map[string]any{"query": "heliotrope budget"}},
		{Op: "call", Tool: "archive_cite", Args: map[string]any{"version": "v1", "part": 0, "start": 16, "length": 22}},
		{Op: "call", Tool: "archive_add", Args: map[string]any{"collection": "minutes", "item": "2024-06", "request": "minutes-2024-06",
			"parts": []any{map[string]any{"text": "other text"}}}},
	}}
	out := runTS(t, modules, plan)
	names := func(i int) []string {
		var n []string
		for _, tool := range out.Results[i].Tools {
			n = append(n, tool.Name)
		}
		return n
	}
	if slices.Contains(names(0), "archive_add") {
		t.Fatalf("the archive tools are listed before a search: %v", names(0))
	}
	for _, want := range []string{"archive_add", "archive_search", "archive_cite", "archive_list", "archive_versions"} {
		if !slices.Contains(names(2), want) {
			t.Fatalf("%s is not listed after tool_search: %v", want, names(2))
		}
	}
	if slices.Contains(names(2), "archive_fetch") {
		t.Fatal("archive_fetch is listed without a source policy")
	}
	for i := 3; i <= 6; i++ {
		if r := out.Results[i]; r.Thrown != nil || r.IsError {
			t.Fatalf("step %d (%s): %+v", i, r.Tool, r)
		}
	}
	var hits struct {
		Hits []struct {
			Version    string `json:"version"`
			Part       int    `json:"part"`
			PartSHA256 string `json:"part_sha256"`
			Page       string `json:"page"`
			Snippet    string `json:"snippet"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(out.Results[5].Structured, &hits); err != nil || len(hits.Hits) != 1 || hits.Hits[0].Version != "v1" || hits.Hits[0].Page != "3" {
		t.Fatalf("search: %s", out.Results[5].Structured)
	}
	var cited struct {
		Citation struct {
			PartSHA256 string `json:"part_sha256"`
			Quote      struct {
				Exact string `json:"exact"`
			} `json:"quote"`
			Warnings []string `json:"warnings"`
		} `json:"citation"`
	}
	if err := json.Unmarshal(out.Results[6].Structured, &cited); err != nil {
		t.Fatal(err)
	}
	if want := string([]rune(text)[16:38]); cited.Citation.Quote.Exact != want || cited.Citation.PartSHA256 != hits.Hits[0].PartSHA256 || len(cited.Citation.Warnings) != 1 {
		t.Fatalf("cite: %+v, want %q", cited, want)
	}
	if r := out.Results[7]; !r.IsError || !strings.HasPrefix(r.Text, "conflict: ") {
		t.Fatalf("the same request with other content: %+v", r)
	}
}
