package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/capkit/capkit/internal/testkit/nettest"
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
		{name: "search", args: []string{"archive", "search", root, "new"}, out: `1. v2 part 0 of "docs" "report" #2`},
		{name: "search misses older versions", args: []string{"archive", "search", root, "heliotrope"}, out: "0 hits"},
		{name: "search finds current versions only", args: []string{"archive", "search", root, "new", "--collection", "docs", "--json"}, out: `"version": "v2"`},
		{name: "search bad fts", args: []string{"archive", "search", root, `"open`, "--mode", "fts"}, code: 2},
		{name: "cite", args: []string{"archive", "cite", root, "v1", "--part", "0", "--start", "4", "--length", "10"}, out: `exact text: "heliotrope"`},
		{name: "cite across the part's end", args: []string{"archive", "cite", root, "v1", "--start", "30", "--length", "10"}, code: 2},
		{name: "cite an unknown version", args: []string{"archive", "cite", root, "v9", "--length", "1"}, code: 3},
		{name: "audit", args: []string{"archive", "audit", root}, out: "no problems"},
		{name: "audit sample", args: []string{"archive", "audit", root, "--sample", "50%"}, out: "sample audit of 50%"},
		{name: "audit bad sample", args: []string{"archive", "audit", root, "--sample", "0%"}, code: 2},
		{name: "not an archive", args: []string{"archive", "list", dir, "--collection", "docs"}, code: 3},
	})
}

func TestArchiveCiteCheck(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "arch")
	mustNil(t, os.WriteFile(filepath.Join(dir, "parts.json"), []byte(`{"parts": [{"text": "e\u0301 then 👋🏽 and\r\nmore"}]}`), 0o600))
	for _, args := range [][]string{{"archive", "init", root}, {"archive", "add-text", root, "--collection", "c", "--item", "i", "--request", "r", filepath.Join(dir, "parts.json")}} {
		if code, out, errOut := run(t, "", args...); code != 0 {
			t.Fatalf("%v: %d %s %s", args, code, out, errOut)
		}
	}
	code, out, errOut := run(t, "", "archive", "cite", root, "v1", "--start", "0", "--length", "2", "--json")
	if code != 0 {
		t.Fatalf("cite: %d %s", code, errOut)
	}
	var cited struct {
		Citation json.RawMessage `json:"citation"`
	}
	mustNil(t, json.Unmarshal([]byte(out), &cited))
	if code, out, _ := run(t, string(cited.Citation), "archive", "cite", root, "--check", "-"); code != 0 || !strings.Contains(out, "the citation holds: v1 part 0") {
		t.Fatalf("check: %d %s", code, out)
	}
	bad := strings.Replace(string(cited.Citation), "\"exact\": \"e\u0301\"", "\"exact\": \"e\u0300\"", 1)
	if bad == string(cited.Citation) {
		t.Fatalf("the citation's quote is not where the test expects it: %s", cited.Citation)
	}
	if code, _, errOut := run(t, bad, "archive", "cite", root, "--check", "-"); code != 9 || !strings.Contains(errOut, "quote") {
		t.Fatalf("check of an altered quote: %d %s", code, errOut)
	}
	if code, out2, _ := run(t, out, "archive", "cite", root, "--check", "-"); code != 0 || !strings.Contains(out2, "holds") {
		t.Fatalf("check of what cite --json printed: %d %s", code, out2)
	}
	if code, _, _ := run(t, "", "archive", "cite", root, "v1", "--check", "-"); code != 2 {
		t.Fatalf("--check with a version: %d", code)
	}
}

func TestArchiveFetch(t *testing.T) {
	ca := nettest.NewCA(t)
	var gets atomic.Int64
	port := ca.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<title>Notes</title><p>The heliotrope committee met on Tuesday.</p>`)
	}), "localhost")
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	ca.WritePEM(t, dir, "ca.pem")
	mustNil(t, os.WriteFile(p("source.json"), []byte(fmt.Sprintf(`{"format": 1, "group": "notes", "hosts": ["localhost"], "retention": "original",
		"ports": [%d], "private_destinations": ["127.0.0.0/8", "::1/128"], "ca_file": "ca.pem"}`, port)), 0o600))
	root := p("arch")
	url := fmt.Sprintf("https://localhost:%d/notes", port)
	fetchArgs := []string{"archive", "fetch", root, url, "--source-policy", p("source.json"), "--budget-root", p("budget"), "--task", "t", "--request", "op-1"}
	runCases(t, []cmdCase{
		{name: "init", args: []string{"archive", "init", root}},
		{name: "fetch", args: fetchArgs, out: "fetched and retained (original): v1"},
		{name: "fetch repeated", args: fetchArgs, out: "retained before (nothing fetched now): v1"},
		{name: "fetch without a budget", args: fetchArgs[:len(fetchArgs)-6], code: 2},
		{name: "cite the retained text", args: []string{"archive", "cite", root, "v1", "--start", "0", "--length", "12"}, out: `exact text: "Title: Notes"`},
		{name: "search it", args: []string{"archive", "search", root, "heliotrope", "--collection", "notes"}, out: "1. v1 part 0"},
		{name: "audit", args: []string{"archive", "audit", root}, out: "no problems"},
	})
	if n := gets.Load(); n != 1 {
		t.Fatalf("%d GETs for one operation, its repeat and its citation", n)
	}
}

func TestArchiveBackupCommands(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	root := p("arch")
	mustNil(t, os.WriteFile(p("parts.json"), []byte(`{"parts": [{"text": "kept text"}]}`), 0o600))
	runCases(t, []cmdCase{
		{name: "init", args: []string{"archive", "init", root}},
		{name: "add", args: []string{"archive", "add-text", root, "--collection", "c", "--item", "i", "--request", "r", p("parts.json")}},
		{name: "backup", args: []string{"archive", "backup", root, p("b.tar")}, out: "manifest sha256 "},
		{name: "backup onto a file", args: []string{"archive", "backup", root, p("b.tar")}, code: 4},
		{name: "backup past its bound", args: []string{"archive", "backup", root, p("c.tar"), "--max-bytes", "100"}, code: 6},
		{name: "verify-backup", args: []string{"archive", "verify-backup", p("b.tar")}, out: "audits clean"},
		{name: "verify-backup pinned wrong", args: []string{"archive", "verify-backup", p("b.tar"), "--manifest-sha256", strings.Repeat("0", 64)}, code: 9},
		{name: "restore", args: []string{"archive", "restore", p("b.tar"), p("restored")}, out: "restored to " + p("restored")},
		{name: "restore onto a directory", args: []string{"archive", "restore", p("b.tar"), p("restored")}, code: 4},
		{name: "restored cites", args: []string{"archive", "cite", p("restored"), "v1", "--length", "4"}, out: `exact text: "kept"`},
		{name: "restore of no backup", args: []string{"archive", "restore", p("parts.json"), p("r2")}, code: 9},
		{name: "migrate", args: []string{"archive", "migrate", root}, out: "at schema 1 already"},
		{name: "rebuild", args: []string{"archive", "rebuild", root}, out: "rebuilt the index: 1 parts"},
		{name: "cleanup preview", args: []string{"archive", "cleanup", root, "--preview"}, out: "nothing to clean up"},
		{name: "cleanup with another token", args: []string{"archive", "cleanup", root, "--apply", "cleanup-0"}, code: 4},
		{name: "cleanup with neither", args: []string{"archive", "cleanup", root}, code: 2},
	})
}
