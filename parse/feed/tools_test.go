package feed

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
	e, _, ok := rt.Catalog().Lookup("feed_parse")
	if p, _ := rt.Policy("feed_parse"); !ok || e.Effect != capability.Parse || e.Hot || p.MaxInputBytes != limits.FeedToolMaxInputBytes {
		t.Fatalf("entry %+v policy %+v", e, p)
	}
	return testkit.Session(t, rt, testkit.Grant(t, []string{"/srv/feeds"}, effects...))
}

func TestParseTool(t *testing.T) {
	reader := testkit.Files{"news.xml": fixture(t, "rss2_news.xml"), "laughs.xml": fixture(t, "billion_laughs.xml")}
	args := func(m map[string]any) json.RawMessage {
		data, _ := json.Marshal(m)
		return data
	}
	withReader := &ToolOptions{Files: reader}
	both := []capability.Effect{capability.Parse, capability.ReadFile}
	cases := []struct {
		name    string
		opts    *ToolOptions
		effects []capability.Effect
		args    json.RawMessage
		code    fault.Code
		text    string
	}{
		{"path", withReader, both, args(map[string]any{"path": "news.xml", "url": source, "limit": 2}), "",
			"Entries: 2 of 7 returned, 5 omitted by the entry limit"},
		{"inline", nil, []capability.Effect{capability.Parse},
			args(map[string]any{"text": string(fixture(t, "atom_blog.xml")), "url": source, "limit": 1}), "", "[0] Profiling Go services in production"},
		{"billion laughs", withReader, both, args(map[string]any{"path": "laughs.xml", "url": source, "limit": 2}), fault.InvalidInput, ""},
		// Only a path: every entry (the entries limit), no base URL, so a
		// relative link is left out and said to need one.
		{"only a path", withReader, both, args(map[string]any{"path": "news.xml"}), "",
			"Entries: 7 of 7 returned"},
		{"only text", nil, []capability.Effect{capability.Parse}, args(map[string]any{"text": string(fixture(t, "atom_blog.xml"))}), "",
			"[0] Profiling Go services in production"},
		{"an explicit limit wins", withReader, both, args(map[string]any{"path": "news.xml", "limit": 3}), "",
			"Entries: 3 of 7 returned, 4 omitted by the entry limit"},
		{"a limit below one", withReader, both, args(map[string]any{"path": "news.xml", "limit": -1}), fault.InvalidInput, ""},
		{"a url that is not absolute", withReader, both, args(map[string]any{"path": "news.xml", "url": "/feed.xml"}), fault.InvalidInput, ""},
		{"limit past max", withReader, both, args(map[string]any{"path": "news.xml", "url": source, "limit": limits.FeedMaxEntries + 1}), fault.Limit, ""},
		{"path without reader", nil, both, args(map[string]any{"path": "news.xml", "url": source, "limit": 2}), fault.Denied, ""},
		{"not found", withReader, both, args(map[string]any{"path": "gone.xml", "url": source, "limit": 2}), fault.NotFound, ""},
		{"inline past byte limit", nil, []capability.Effect{capability.Parse},
			args(map[string]any{"text": strings.Repeat("a", limits.FeedMaxBytes+1), "url": source, "limit": 2}), fault.Limit, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := testkit.Call(t, toolSession(t, c.opts, c.effects...), "feed_parse", c.args)
			if fault.CodeOf(err) != c.code {
				t.Fatalf("code %q (%v), want %q", fault.CodeOf(err), err, c.code)
			}
			if c.code != "" {
				return
			}
			if !strings.Contains(res.Text, c.text) {
				t.Fatalf("text %q", res.Text)
			}
			var meta ParseResult
			if err := json.Unmarshal(res.Structured, &meta); err != nil || meta.TotalEntries == 0 || strings.Contains(string(res.Structured), "Residents have") {
				t.Fatalf("structured %s", res.Structured)
			}
			if c.name == "only a path" && (strings.Contains(res.Text, "Link: 2024/03/school-roof") || !strings.Contains(string(res.Structured), "relative and no base URL was given")) {
				t.Fatalf("a relative link without a base URL: %s\n%s", res.Text, res.Structured)
			}
		})
	}
}

func TestParseOutputBound(t *testing.T) {
	f, err := Parse(context.Background(), fixture(t, "rss2_news.xml"), source, 7)
	if err != nil {
		t.Fatal(err)
	}
	linewindow.Edges(t, "feed_parse", func(call *kernel.Call, offset int) (kernel.Texter, toolkit.Span, error) {
		r, err := f.result(call, offset)
		return r, r.Span, err
	})
}

func TestParseInputBound(t *testing.T) {
	s := toolSession(t, nil, capability.Parse)
	fields := `"url":"` + source + `","limit":1,`
	// At the bound the arguments reach the parser (which finds no XML);
	// one byte more and the kernel refuses them.
	args := testkit.EscapedArgs(t, fields, limits.FeedMaxBytes, limits.FeedToolMaxInputBytes)
	if _, err := s.Call(context.Background(), "feed_parse", args); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("at the bound: %v", err)
	}
	args = testkit.EscapedArgs(t, fields, limits.FeedMaxBytes, limits.FeedToolMaxInputBytes+1)
	if _, err := s.Call(context.Background(), "feed_parse", args); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one past the bound: %v", err)
	}
}

// TestParseToolWindows follows next_offset through the tool itself.
func TestParseToolWindows(t *testing.T) {
	reader := testkit.Files{"news.xml": fixture(t, "rss2_news.xml")}
	args := map[string]any{"path": "news.xml", "url": source, "limit": 7}
	whole, err := testkit.Call(t, toolSession(t, &ToolOptions{Files: reader}, capability.Parse, capability.ReadFile), "feed_parse", args)
	if err != nil {
		t.Fatal(err)
	}
	rt := testkit.RuntimeBound(t, RegisterTools, &ToolOptions{Files: reader}, 1500)
	s := testkit.Session(t, rt, testkit.Grant(t, []string{"/srv"}, capability.Parse, capability.ReadFile))
	var all strings.Builder
	windows := testkit.Windows(t, s, "feed_parse", args, "offset", "next_offset")
	for _, res := range windows {
		var r ParseResult
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
	testkit.WindowBounds(t, session, "feed_parse", args, "offset", "next_offset")
}
