package htmldoc

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/kernel/toolkit"
	"github.com/capkit/capkit/limits"
)

func toolSession(t *testing.T, opts *ToolOptions, effects ...capability.Effect) *kernel.Session {
	t.Helper()
	rt := testkit.Runtime(t, RegisterTools, opts)
	if p, _ := rt.Policy("html_extract"); p.MaxInputBytes != limits.HTMLToolMaxInputBytes {
		t.Fatalf("policy %+v", p)
	}
	e, _, ok := rt.Catalog().Lookup("html_extract")
	if !ok || e.Effect != capability.Parse || e.Hot {
		t.Fatalf("entry %+v", e)
	}
	return testkit.Session(t, rt, testkit.Grant(t, []string{"/srv/docs"}, effects...))
}

func TestExtractTool(t *testing.T) {
	reader := testkit.Files{"news.html": fixture(t, "article_news.html"), "login.html": fixture(t, "screen_login.html")}
	args := func(m map[string]any) json.RawMessage {
		data, _ := json.Marshal(m)
		return data
	}
	cases := []struct {
		name    string
		opts    *ToolOptions
		effects []capability.Effect
		args    json.RawMessage
		code    fault.Code
		text    string // in the text the model reads
	}{
		{"inline text", nil, []capability.Effect{capability.Parse},
			args(map[string]any{"text": "<title>T</title><h1>Hello</h1><p>world</p>", "select": "text"}), "", "# Hello\n\nworld"},
		{"path article", &ToolOptions{Files: reader}, []capability.Effect{capability.Parse, capability.ReadFile},
			args(map[string]any{"path": "news.html", "select": "article", "base_url": fixtureBase}), "", "Article: article.story"},
		{"access screen", &ToolOptions{Files: reader}, []capability.Effect{capability.Parse, capability.ReadFile},
			args(map[string]any{"path": "login.html", "select": "text"}), fault.Integrity, ""},
		{"path without reader", nil, []capability.Effect{capability.Parse},
			args(map[string]any{"path": "news.html", "select": "text"}), fault.Denied, ""},
		{"path without read roots", &ToolOptions{Files: reader}, []capability.Effect{capability.Parse},
			args(map[string]any{"path": "news.html", "select": "text"}), fault.Denied, ""},
		{"text and path", &ToolOptions{Files: reader}, []capability.Effect{capability.Parse, capability.ReadFile},
			args(map[string]any{"path": "news.html", "text": "<p>x", "select": "text"}), fault.InvalidInput, ""},
		{"neither", nil, []capability.Effect{capability.Parse}, args(map[string]any{"select": "text"}), fault.InvalidInput, ""},
		{"missing select", nil, []capability.Effect{capability.Parse}, args(map[string]any{"text": "<p>x"}), fault.InvalidInput, ""},
		{"bad select", nil, []capability.Effect{capability.Parse}, args(map[string]any{"text": "<p>x", "select": "all"}), fault.InvalidInput, ""},
		{"not granted", nil, []capability.Effect{capability.ReadFile}, args(map[string]any{"text": "<p>x", "select": "text"}), fault.Denied, ""},
		{"inline past the byte limit", nil, []capability.Effect{capability.Parse},
			args(map[string]any{"text": strings.Repeat("a", limits.HTMLMaxBytes+1), "select": "text"}), fault.Limit, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := testkit.Call(t, toolSession(t, c.opts, c.effects...), "html_extract", c.args)
			if fault.CodeOf(err) != c.code {
				t.Fatalf("code %q (%v), want %q", fault.CodeOf(err), err, c.code)
			}
			if c.code != "" {
				return
			}
			if !strings.Contains(res.Text, c.text) {
				t.Fatalf("text %q", res.Text)
			}
			// Content is in the text only; structured content is metadata.
			if strings.Contains(string(res.Structured), "Hello") || strings.Contains(string(res.Structured), "bridge reopened to traffic") {
				t.Fatalf("content repeated in structured content: %s", res.Structured)
			}
		})
	}
	// An access screen's message reaches an untrusted caller intact.
	s := toolSession(t, &ToolOptions{Files: reader}, capability.Parse, capability.ReadFile)
	_, err := s.Call(context.Background(), "html_extract", args(map[string]any{"path": "login.html", "select": "article"}))
	if !strings.Contains(err.Error(), "login wall") {
		t.Fatalf("message %v", err)
	}
}

func TestExtractOutputBound(t *testing.T) {
	doc, err := Parse(context.Background(), fixture(t, "article_news.html"), SelectText, nil)
	if err != nil {
		t.Fatal(err)
	}
	windowEdges(t, "html_extract", func(call *kernel.Call, offset int) (kernel.Texter, toolkit.Span, error) {
		r, err := doc.result(call, offset)
		return r, r.Span, err
	})
}

// windowEdges checks a tool's line windows: at the bound the whole text,
// one byte less a window of whole lines naming the next offset; small
// windows followed to the end give the text back exactly; a bound no line
// fits fails with limit and says how to raise it; an offset past the end
// is invalid_input.
func windowEdges(t *testing.T, tool string, result func(*kernel.Call, int) (kernel.Texter, toolkit.Span, error)) {
	t.Helper()
	call := func(max int64) *kernel.Call {
		return &kernel.Call{Tool: &catalog.Entry{Name: tool}, MaxOutputBytes: max}
	}
	get := func(max int64, offset int) (string, toolkit.Span, int64, error) {
		r, span, err := result(call(max), offset)
		if err != nil {
			return "", span, 0, err
		}
		res, err := kernel.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		return res.Text, span, res.Size(), nil
	}
	full, span, size, err := get(1<<30, 0)
	if err != nil || span.NextOffset != 0 || span.TotalLines < 10 {
		t.Fatalf("whole: %+v %v", span, err)
	}
	if text, span, got, err := get(size, 0); err != nil || text != full || span.NextOffset != 0 || got != size {
		t.Fatalf("at the bound: %+v %v", span, err)
	}
	text, span, got, err := get(size-1, 0)
	shown := strings.Join(strings.SplitAfter(text, "\n")[:span.Lines], "")
	if err != nil || span.NextOffset != span.Lines || span.Lines == 0 || got > size-1 || !strings.HasPrefix(full, shown) ||
		!strings.Contains(text, fmt.Sprintf("%s with offset=%d", tool, span.NextOffset)) {
		t.Fatalf("one past the bound: %+v, %d bytes, %v", span, got, err)
	}
	const small = 1500
	var all strings.Builder
	for off := 0; ; {
		text, span, got, err := get(small, off)
		if err != nil || got > small || span.Offset != off {
			t.Fatalf("window at %d: %+v, %d bytes, %v", off, span, got, err)
		}
		all.WriteString(strings.Join(strings.SplitAfter(text, "\n")[:span.Lines], ""))
		if span.NextOffset == 0 {
			break
		}
		off = span.NextOffset
	}
	if all.String() != full {
		t.Fatalf("windows reassemble %d bytes, want %d", all.Len(), len(full))
	}
	// The longest line, at a bound of its own length (the result around it
	// needs more), does not fit.
	longest := 0
	lines := strings.SplitAfter(full, "\n")
	for i, l := range lines {
		if len(l) > len(lines[longest]) {
			longest = i
		}
	}
	_, _, _, err = get(int64(len(lines[longest])), longest)
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), fmt.Sprintf("line %d of", longest+1)) || !strings.Contains(err.Error(), "[tool."+tool+"] max_output_bytes") {
		t.Fatalf("a line over the bound: %v", err)
	}
	if _, _, _, err := get(size, span.TotalLines); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("an offset past the end: %v", err)
	}
}

func TestExtractInputBound(t *testing.T) {
	s := toolSession(t, nil, capability.Parse)
	// A document at the HTML byte limit, fully escaped, fits the input
	// bound; one more byte of arguments does not.
	args := testkit.EscapedArgs(t, `"select":"text",`, limits.HTMLMaxBytes, limits.HTMLToolMaxInputBytes)
	if _, err := s.Call(context.Background(), "html_extract", args); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	args = testkit.EscapedArgs(t, `"select":"text",`, limits.HTMLMaxBytes, limits.HTMLToolMaxInputBytes+1)
	if _, err := s.Call(context.Background(), "html_extract", args); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one past the bound: %v", err)
	}
}

// TestExtractToolWindows follows next_offset through the tool itself.
func TestExtractToolWindows(t *testing.T) {
	reader := testkit.Files{"news.html": fixture(t, "article_news.html")}
	args := map[string]any{"path": "news.html", "select": "text"}
	whole, err := testkit.Call(t, toolSession(t, &ToolOptions{Files: reader}, capability.Parse, capability.ReadFile), "html_extract", args)
	if err != nil {
		t.Fatal(err)
	}
	rt := testkit.RuntimeBound(t, RegisterTools, &ToolOptions{Files: reader}, 2048)
	s := testkit.Session(t, rt, testkit.Grant(t, []string{"/srv"}, capability.Parse, capability.ReadFile))
	var all strings.Builder
	windows := testkit.Windows(t, s, "html_extract", args, "offset", "next_offset")
	for _, res := range windows {
		var r ExtractResult
		if err := json.Unmarshal(res.Structured, &r); err != nil {
			t.Fatal(err)
		}
		all.WriteString(strings.Join(strings.SplitAfter(res.Text, "\n")[:r.Lines], ""))
	}
	if len(windows) < 2 || all.String() != whole.Text {
		t.Fatalf("%d windows reassemble %d bytes, want %d", len(windows), all.Len(), len(whole.Text))
	}
}
