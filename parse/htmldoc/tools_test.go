package htmldoc

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/internal/testkit/linewindow"
	"github.com/capkit/capkit/kernel"
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
		{"access screen allowed", &ToolOptions{Files: reader}, []capability.Effect{capability.Parse, capability.ReadFile},
			args(map[string]any{"path": "login.html", "allow_access_screen": true}), "", "Warning (access_screen): the page looks like a login wall (evidence: "},
		{"path without reader", nil, []capability.Effect{capability.Parse},
			args(map[string]any{"path": "news.html", "select": "text"}), fault.Denied, ""},
		{"path without read roots", &ToolOptions{Files: reader}, []capability.Effect{capability.Parse},
			args(map[string]any{"path": "news.html", "select": "text"}), fault.Denied, ""},
		{"text and path", &ToolOptions{Files: reader}, []capability.Effect{capability.Parse, capability.ReadFile},
			args(map[string]any{"path": "news.html", "text": "<p>x", "select": "text"}), fault.InvalidInput, ""},
		{"neither", nil, []capability.Effect{capability.Parse}, args(map[string]any{"select": "text"}), fault.InvalidInput, ""},
		// Only a path or text: the whole text, no base URL.
		{"only text", nil, []capability.Effect{capability.Parse}, args(map[string]any{"text": "<title>T</title><h1>Hello</h1><p>world</p>"}), "", "# Hello\n\nworld"},
		{"only a path", &ToolOptions{Files: reader}, []capability.Effect{capability.Parse, capability.ReadFile},
			args(map[string]any{"path": "news.html"}), "", "links_unresolved"},
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
	linewindow.Edges(t, "html_extract", func(call *kernel.Call, offset int) (kernel.Texter, toolkit.Span, error) {
		r, err := doc.result(call, offset)
		return r, r.Span, err
	})
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
	session := func(max int64) *kernel.Session {
		rt := testkit.RuntimeBound(t, RegisterTools, &ToolOptions{Files: reader}, max)
		return testkit.Session(t, rt, testkit.Grant(t, []string{"/srv"}, capability.Parse, capability.ReadFile))
	}
	testkit.WindowBounds(t, session, "html_extract", args, "offset", "next_offset")
}
