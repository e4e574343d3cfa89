package cli

import (
	"os"
	"path/filepath"
	"testing"
)

func TestArchiveCommands(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "arch")
	p := func(name string) string { return filepath.Join(dir, name) }
	mustNil(t, os.WriteFile(p("parts.json"), []byte(`{"parts": [{"text": "The heliotrope report.\r\nSecond line.", "page": 1, "method": "typed"}], "title": "Report"}`), 0o600))
	mustNil(t, os.WriteFile(p("other.json"), []byte(`{"parts": [{"text": "Another text."}]}`), 0o600))
	mustNil(t, os.WriteFile(p("bad.json"), []byte(`{"parts": [{"text": "x", "pages": 1}]}`), 0o600))
	mustNil(t, os.WriteFile(p("file.pdf"), []byte("%PDF-1.7"), 0o600))
	runCases(t, []cmdCase{
		{name: "init", args: []string{"archive", "init", root}, out: "created at " + root},
		{name: "init again", args: []string{"archive", "init", root}, code: 4},
		{name: "add-text", args: []string{"archive", "add-text", root, "--collection", "docs", "--item", "report", "--request", "r1", p("parts.json")}, out: "added v1"},
		{name: "add-text repeated", args: []string{"archive", "add-text", root, "--collection", "docs", "--item", "report", "--request", "r1", p("parts.json"), "--json"}, out: `"repeated": true`},
		{name: "add-text conflict", args: []string{"archive", "add-text", root, "--collection", "docs", "--item", "report", "--request", "r1", p("other.json")}, code: 4},
		{name: "add-text on stdin", stdin: `{"parts": [{"text": "new"}]}`, args: []string{"archive", "add-text", root, "--collection", "docs", "--item", "report", "--request", "r2", "-"}, out: "added v2"},
		{name: "add-text unknown member", args: []string{"archive", "add-text", root, "--collection", "docs", "--item", "x", "--request", "r3", p("bad.json")}, code: 2, err: "unknown member"},
		{name: "add-file", args: []string{"archive", "add-file", root, "--collection", "files", "--request", "f1", "--media-type", "application/pdf", p("file.pdf")}, out: `name "file.pdf"`},
		{name: "add-file without a media type", args: []string{"archive", "add-file", root, "--collection", "files", "--request", "f2", p("file.pdf")}, code: 2},
		{name: "add-file of a directory", args: []string{"archive", "add-file", root, "--collection", "files", "--request", "f3", "--media-type", "text/plain", dir}, code: 2},
		{name: "list", args: []string{"archive", "list", root, "--collection", "docs"}, out: `"report" (2 versions)`},
		{name: "list json", args: []string{"archive", "list", root, "--collection", "docs", "--json"}, out: `"total": 1`},
		{name: "list unknown", args: []string{"archive", "list", root, "--collection", "nope"}, code: 3},
		{name: "list past the limit", args: []string{"archive", "list", root, "--collection", "docs", "--limit", "101"}, code: 6},
		{name: "versions", args: []string{"archive", "versions", root, "--collection", "docs", "--item", "report"}, out: "v1: \"docs\" \"report\" #1"},
		{name: "audit", args: []string{"archive", "audit", root}, out: "no problems"},
		{name: "audit sample", args: []string{"archive", "audit", root, "--sample", "50%"}, out: "sample audit of 50%"},
		{name: "audit bad sample", args: []string{"archive", "audit", root, "--sample", "0%"}, code: 2},
		{name: "not an archive", args: []string{"archive", "list", dir, "--collection", "docs"}, code: 3},
	})
}
