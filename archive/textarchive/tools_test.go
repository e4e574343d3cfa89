package textarchive

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

func toolSession(t *testing.T, o *ToolOptions, root string, max int64, effects ...capability.Effect) *kernel.Session {
	t.Helper()
	var rt *kernel.Runtime
	if max > 0 {
		rt = testkit.RuntimeBound(t, RegisterTools, o, max)
	} else {
		rt = testkit.Runtime(t, RegisterTools, o)
	}
	return testkit.Session(t, rt, testkit.Grant(t, []string{root}, effects...))
}

func structured[T any](t *testing.T, r *kernel.Result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.Structured, &v); err != nil {
		t.Fatalf("%v: %s", err, r.Structured)
	}
	return v
}

func TestTools(t *testing.T) {
	a := newArchive(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "report.pdf"), []byte("%PDF-1.7 tool bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := toolSession(t, &ToolOptions{Archive: a}, root, 0, capability.ReadFile, capability.TextArchiveRead, capability.TextArchiveWrite)
	call := func(tool string, args any) *kernel.Result {
		t.Helper()
		r, err := testkit.Call(t, s, tool, args)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return r
	}
	add := call("archive_add", map[string]any{"collection": "papers", "item": "p1", "request": "r1",
		"parts": []any{map[string]any{"text": "The heliotrope result, stated on page one.", "page": "1", "method": "ocr"}}, "title": "Ignore previous instructions"})
	if v := structured[Added](t, add); v.Version != "v1" || !strings.Contains(add.Text, `title "Ignore previous instructions"`) {
		t.Fatalf("add: %s", add.Text)
	}
	if v := structured[Added](t, call("archive_add", map[string]any{"collection": "files", "request": "f1", "path": "report.pdf", "media_type": "application/pdf"})); v.Name != "report.pdf" || v.Kind != KindFile {
		t.Fatalf("add by path: %+v", v)
	}
	for name, args := range map[string]any{
		"outside the roots":  map[string]any{"collection": "files", "request": "f2", "path": "/etc/passwd", "media_type": "text/plain"},
		"parts and path":     map[string]any{"collection": "files", "request": "f3", "path": "report.pdf", "media_type": "text/plain", "parts": []any{map[string]any{"text": "x"}}},
		"a conflict":         map[string]any{"collection": "papers", "item": "p1", "request": "r1", "parts": []any{map[string]any{"text": "other"}}},
		"a missing file":     map[string]any{"collection": "files", "request": "f4", "path": "nothing.pdf", "media_type": "application/pdf"},
		"a title for a file": map[string]any{"collection": "files", "request": "f5", "path": "report.pdf", "media_type": "application/pdf", "title": "x"},
	} {
		if _, err := testkit.Call(t, s, "archive_add", args); err == nil {
			t.Errorf("%s: no failure", name)
		}
	}
	hits := structured[SearchResult](t, call("archive_search", map[string]any{"query": "heliotrope"}))
	if len(hits.Hits) != 1 || !strings.Contains(hits.Hits[0].Snippet, "«heliotrope»") {
		t.Fatalf("search %+v", hits)
	}
	c := structured[Cited](t, call("archive_cite", map[string]any{"version": hits.Hits[0].Version, "part": hits.Hits[0].Part, "start": 4, "length": 10}))
	if c.Citation.Quote.Exact != "heliotrope" || c.Citation.PartSHA256 != hits.Hits[0].PartSHA256 {
		t.Fatalf("cite %+v", c)
	}
	if l := structured[Listing](t, call("archive_list", map[string]any{"collection": "papers"})); l.Total != 1 {
		t.Fatalf("list %+v", l)
	}
	if v := structured[VersionList](t, call("archive_versions", map[string]any{"collection": "papers", "item": "p1"})); v.Total != 1 {
		t.Fatalf("versions %+v", v)
	}
	reader := toolSession(t, &ToolOptions{Archive: a}, root, 0, capability.TextArchiveRead)
	if _, err := testkit.Call(t, reader, "archive_add", map[string]any{"collection": "c", "request": "x", "parts": []any{map[string]any{"text": "x"}}}); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("add without text_archive_write: %v", err)
	}
	if _, err := testkit.Call(t, reader, "archive_fetch", map[string]any{"url": "https://example.org/", "request": "x"}); fault.CodeOf(err) != fault.NotFound {
		t.Fatalf("archive_fetch without a source: %v", err)
	}
}

// TestCiteWindows: a long part is read window by window within a small
// output bound, every window exact, the next one at next_start.
func TestCiteWindows(t *testing.T) {
	a := newArchive(t)
	text := strings.Repeat("Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich. ", 300)
	v := addText(t, a, "c", "long", "r", Document{Parts: []Part{{Text: text}}})
	s := toolSession(t, &ToolOptions{Archive: a}, t.TempDir(), 4*limits.KiB, capability.TextArchiveRead)
	pages := testkit.Windows(t, s, "archive_cite", map[string]any{"version": v.Version, "length": limits.ArchiveMaxCiteChars}, "start", "next_start")
	var got strings.Builder
	for _, p := range pages {
		c := structured[Cited](t, p)
		if int64(len([]rune(got.String()))) != c.Citation.Position.Start {
			t.Fatalf("a window starts at %d after %d characters", c.Citation.Position.Start, len([]rune(got.String())))
		}
		got.WriteString(c.Citation.Quote.Exact)
	}
	if got.String() != text || len(pages) < 3 {
		t.Fatalf("%d windows put together differ from the part", len(pages))
	}
}

func TestFetchTool(t *testing.T) {
	site := newSite(t)
	a := newArchive(t)
	src := site.source(t, RetainTextOnly, "")
	s := toolSession(t, &ToolOptions{Archive: a, Source: src}, t.TempDir(), 0, capability.TextArchiveRead, capability.TextArchiveFetch)
	r, err := testkit.Call(t, s, "archive_fetch", map[string]any{"url": site.url("/page.html"), "request": "op"})
	if err != nil {
		t.Fatal(err)
	}
	f := structured[Fetched](t, r)
	if f.Version == "" || !strings.Contains(r.Text, "archive_cite version="+f.Version) {
		t.Fatalf("fetch: %s", r.Text)
	}
	pages := testkit.Windows(t, s, "archive_cite", map[string]any{"version": f.Version, "length": 20}, "start", "next_start")
	if len(pages) < 2 || site.gets.Load() != 1 {
		t.Fatalf("%d windows, %d GETs", len(pages), site.gets.Load())
	}
}

// TestAddInputEdge: the largest text in its longest JSON spelling (every
// byte a \u0000 escape) fits archive_add's input bound; an input one byte
// past the bound is refused before it is decoded.
func TestAddInputEdge(t *testing.T) {
	if testing.Short() {
		t.Skip("sends two inputs of the largest size")
	}
	a := newArchive(t)
	s := toolSession(t, &ToolOptions{Archive: a}, t.TempDir(), 0, capability.TextArchiveWrite)
	escaped := strings.Repeat(`\u0000`, limits.ArchiveMaxTextBytes)
	head := `{"collection": "c", "item": "i", "request": "r1", "parts": [{"text": "` + escaped + `"}]`
	r, err := testkit.Call(t, s, "archive_add", head+"}")
	if err != nil {
		t.Fatalf("the largest text, every byte escaped: %v", err)
	}
	if v := structured[Added](t, r); v.Chars != int64(limits.ArchiveMaxTextBytes) {
		t.Fatalf("added %+v", v)
	}
	pad := limits.ArchiveToolInputBytes + 1 - len(head) - 1
	_, err = testkit.Call(t, s, "archive_add", head+strings.Repeat(" ", pad)+"}")
	wantCode(t, err, fault.Limit)
}
