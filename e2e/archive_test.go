package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/internal/testkit/nettest"
	"github.com/capkit/capkit/limits"
)

// archiveProject is a project whose capkit.toml offers the archive's
// tools, fetch included: an HTTPS server on 127.0.0.1 with a test CA's
// certificate for localhost (the name /etc/hosts gives the binary's
// resolver), a source policy reviewing it in, a budget root and an
// archive, none of them inside the root.
type archiveProject struct {
	config, archive string
	base            string // https://localhost:PORT
	gets            atomic.Int64
	report          string // the text /report.txt serves
}

func newArchiveProject(t *testing.T) *archiveProject {
	t.Helper()
	dir := tree(t)
	p := &archiveProject{config: filepath.Join(dir, "capkit.toml"), archive: filepath.Join(dir, "archive")}
	var b strings.Builder
	for i := 0; utf8.RuneCountInString(b.String()) < 2*limits.ArchiveMaxCiteChars+5000; i++ {
		fmt.Fprintf(&b, "Line %d of the heliotrope report: é\u0301 👋🏽 ünïcödé.\r\n", i)
	}
	p.report = b.String()
	ca := nettest.NewCA(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/report.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, p.report)
	})
	port := ca.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.gets.Add(1)
		mux.ServeHTTP(w, r)
	}), "localhost")
	p.base = fmt.Sprintf("https://localhost:%d", port)
	ca.WritePEM(t, dir, "ca.pem")
	writePrivate(t, filepath.Join(dir, "source.json"), fmt.Sprintf(`{"format": 1, "group": "docs", "hosts": ["localhost"], "retention": "text_only", "ports": [%d], "private_destinations": ["127.0.0.1"], "ca_file": "ca.pem"}`, port))
	if out, err := exec.Command(capkit, "archive", "init", p.archive).CombinedOutput(); err != nil {
		t.Fatalf("archive init: %v %s", err, out)
	}
	writePrivate(t, p.config, `[[root]]
path = "rw"
[actor.assistant]
effects = ["read_file", "text_archive_read", "text_archive_write", "text_archive_fetch", "tool_search"]
[archive]
root = "archive"
source_policy = "source.json"
budget_root = "archive-budget"
task = "e2e"
`)
	return p
}

// callJSON calls a tool and decodes its structured result into v; a
// tool error fails the test.
func callJSON(t *testing.T, c *client, tool string, args map[string]any, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s: %+v", tool, res.Content)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v in %s", tool, err, raw)
	}
}

type citedWindow struct {
	Citation  json.RawMessage `json:"citation"`
	NextStart int64           `json:"next_start"`
}

// TestGoClientArchiveFetch: a Go SDK client lists the tools (the
// archive's are deferred), finds them, fetches a page through the
// source policy into the archive (one GET), reads its text back window
// by window from the archive (exact, no GET), repeats the fetch (the
// kept result, no GET), searches and cites a hit, and the citation
// holds under capkit archive cite --check; a citation altered by one
// character does not.
func TestGoClientArchiveFetch(t *testing.T) {
	p := newArchiveProject(t)
	c := stdioClient(t, "--config", p.config)
	if _, ok := c.tools(t)["archive_fetch"]; ok {
		t.Fatal("archive_fetch is listed before a search: the archive's tools are deferred")
	}
	c.call(t, "tool_search", map[string]any{"query": "archive fetch cite search", "limit": 12})
	tools := c.tools(t)
	for _, name := range []string{"archive_fetch", "archive_cite", "archive_search", "archive_add"} {
		if _, ok := tools[name]; !ok {
			t.Fatalf("%s is not listed after tool_search", name)
		}
	}
	var fetched struct {
		Version string `json:"version"`
		Repeat  any    `json:"repeat"`
	}
	args := map[string]any{"url": p.base + "/report.txt", "request": "report-1", "collection": "reports", "item": "heliotrope"}
	callJSON(t, c, "archive_fetch", args, &fetched)
	if fetched.Version == "" || p.gets.Load() != 1 {
		t.Fatalf("fetch: %+v, %d GETs", fetched, p.gets.Load())
	}
	var text strings.Builder
	windows := 0
	for start := int64(0); ; {
		windows++
		var w citedWindow
		callJSON(t, c, "archive_cite", map[string]any{"version": fetched.Version, "part": 0, "start": start, "length": limits.ArchiveMaxCiteChars}, &w)
		var cit struct {
			Quote struct {
				Exact string `json:"exact"`
			} `json:"quote"`
		}
		json.Unmarshal(w.Citation, &cit)
		text.WriteString(cit.Quote.Exact)
		if w.NextStart == 0 {
			break
		}
		start = w.NextStart
	}
	if text.String() != p.report || windows < 3 {
		t.Fatalf("the text read back in %d windows: %d bytes, the page's %d, equal %v", windows, text.Len(), len(p.report), text.String() == p.report)
	}
	var again struct {
		Version string `json:"version"`
	}
	callJSON(t, c, "archive_fetch", args, &again)
	if again.Version != fetched.Version || p.gets.Load() != 1 {
		t.Fatalf("the repeated fetch: %+v, %d GETs", again, p.gets.Load())
	}
	var hits struct {
		Hits []struct {
			Version string `json:"version"`
			Part    int    `json:"part"`
		} `json:"hits"`
	}
	callJSON(t, c, "archive_search", map[string]any{"query": "Line 7 heliotrope", "collection": "reports"}, &hits)
	if len(hits.Hits) != 1 || hits.Hits[0].Version != fetched.Version {
		t.Fatalf("search: %+v", hits)
	}
	var cited citedWindow
	callJSON(t, c, "archive_cite", map[string]any{"version": fetched.Version, "part": 0, "start": 7, "length": 29}, &cited)
	if code, out, errOut := run(t, string(cited.Citation), "archive", "cite", p.archive, "--check", "-"); code != 0 || !strings.Contains(out, "holds") {
		t.Fatalf("cite --check of the model's citation: %d %s %s", code, out, errOut)
	}
	altered := strings.Replace(string(cited.Citation), "heliotrope", "heliotropo", 1)
	if altered == string(cited.Citation) {
		t.Fatalf("the citation does not quote the report: %s", cited.Citation)
	}
	if code, _, errOut := run(t, altered, "archive", "cite", p.archive, "--check", "-"); code != 9 {
		t.Fatalf("cite --check of an altered citation: exit %d %s", code, errOut)
	}
	if p.gets.Load() != 1 {
		t.Fatalf("%d GETs: the archive fetched again", p.gets.Load())
	}
}

// TestTypeScriptClientArchiveFetch: the same path with the TypeScript
// SDK's client, as Claude Desktop runs it: list, tool_search, list, a
// fetch into the archive, its text read back window by window with
// archive_cite following next_start, a repeated fetch; one GET in all.
func TestTypeScriptClientArchiveFetch(t *testing.T) {
	modules := nodeModules(t)
	p := newArchiveProject(t)
	fetch := map[string]any{"url": p.base + "/report.txt", "request": "report-ts", "collection": "reports", "item": "ts"}
	plan := tsPlan{Transport: "stdio", Command: capkit, Args: []string{"--config", p.config, "serve"}, Cwd: filepath.Dir(p.config), Steps: []tsStep{
		{Op: "list"},
		{Op: "call", Tool: "tool_search", Args: map[string]any{"query": "archive fetch cite", "limit": 12}},
		{Op: "list"},
		{Op: "call", Tool: "archive_fetch", Args: fetch},
		{Op: "follow", Tool: "archive_cite", Args: map[string]any{"version": "v1", "part": 0, "start": 0, "length": limits.ArchiveMaxCiteChars}, OffsetArg: "start", Next: "next_start"},
		{Op: "call", Tool: "archive_fetch", Args: fetch},
	}}
	out := runTS(t, modules, plan)
	listed := func(i int, name string) bool {
		for _, tl := range out.Results[i].Tools {
			if tl.Name == name {
				return true
			}
		}
		return false
	}
	if listed(0, "archive_fetch") || !listed(2, "archive_fetch") || !listed(2, "archive_cite") {
		t.Fatal("archive_fetch is listed before tool_search, or not after it")
	}
	for _, i := range []int{3, 5} {
		if r := out.Results[i]; r.Thrown != nil || r.IsError || !strings.Contains(string(r.Structured), `"version":"v1"`) {
			t.Fatalf("step %d: %+v", i, r)
		}
	}
	var text strings.Builder
	for _, page := range out.Results[4].Pages {
		var w struct {
			Citation struct {
				Quote struct {
					Exact string `json:"exact"`
				} `json:"quote"`
			} `json:"citation"`
		}
		if page.IsError || json.Unmarshal(page.Structured, &w) != nil {
			t.Fatalf("a window: %+v", page)
		}
		text.WriteString(w.Citation.Quote.Exact)
	}
	if n := len(out.Results[4].Pages); text.String() != p.report || n < 3 {
		t.Fatalf("the text read back in %d windows: %d bytes, the page's %d", n, text.Len(), len(p.report))
	}
	if p.gets.Load() != 1 {
		t.Fatalf("%d GETs: a window or the repeat fetched again", p.gets.Load())
	}
}

// TestGoClientArchiveHostile: hostile documents over MCP, from the real
// binary: 1,001 parts and 4 MiB + 1 byte of text are limits, a lone
// surrogate is refused (a parse error), a document of NULs is kept and cited back
// exactly, one request identity with other content is a conflict; the
// server answers every call and the archive audits clean after.
func TestGoClientArchiveHostile(t *testing.T) {
	p := newArchiveProject(t)
	c := stdioClient(t, "--config", p.config)
	c.call(t, "tool_search", map[string]any{"query": "archive add cite", "limit": 12})
	parts := func(n int, text string) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"text": text}
		}
		return out
	}
	add := func(request string, parts []any) string {
		_, code := c.call(t, "archive_add", map[string]any{"collection": "hostile", "item": request, "request": request, "parts": parts})
		return code
	}
	want(t, "1,001 parts", add("parts", parts(limits.ArchiveMaxParts+1, "p")), "limit")
	want(t, "1,000 parts", add("parts-max", parts(limits.ArchiveMaxParts, "p")), "")
	want(t, "4 MiB + 1 of text", add("text", []any{map[string]any{"text": strings.Repeat("a", limits.ArchiveMaxTextBytes)}, map[string]any{"text": "b"}}), "limit")
	nuls := "\x00\x00nul\x00"
	var added struct {
		Version string `json:"version"`
	}
	callJSON(t, c, "archive_add", map[string]any{"collection": "hostile", "item": "nul", "request": "nul", "parts": []any{map[string]any{"text": nuls}}}, &added)
	var cited struct {
		Citation struct {
			Quote struct {
				Exact string `json:"exact"`
			} `json:"quote"`
		} `json:"citation"`
	}
	callJSON(t, c, "archive_cite", map[string]any{"version": added.Version, "part": 0, "start": 0, "length": 6}, &cited)
	if cited.Citation.Quote.Exact != nuls {
		t.Fatalf("the NULs came back as %q", cited.Citation.Quote.Exact)
	}
	want(t, "the same request with other content", add("nul", parts(1, "other")), "conflict")
	if code, out, errOut := run(t, "", "archive", "audit", p.archive); code != 0 {
		t.Fatalf("audit after the hostile calls: exit %d %s %s", code, out, errOut)
	}
	// Last: the server refuses a message with a lone surrogate as a parse
	// error (its id unread, so null), on which the Go SDK's client closes
	// the session.
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "archive_add", Arguments: json.RawMessage(`{"collection": "hostile", "item": "s", "request": "s", "parts": [{"text": "\ud800"}]}`)})
	if err == nil && !res.IsError {
		t.Fatalf("a lone surrogate was kept: %+v", res)
	}
}
