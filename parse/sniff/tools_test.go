package sniff

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

func TestSniffTool(t *testing.T) {
	reader := testkit.Files{"report.pdf": testkit.ReadFile(t, "testdata/report.pdf"), "login.html": testkit.ReadFile(t, "../htmldoc/testdata/screen_login.html")}
	rt := testkit.Runtime(t, RegisterTools, &ToolOptions{Files: reader})
	e, _, ok := rt.Catalog().Lookup("sniff")
	if p, _ := rt.Policy("sniff"); !ok || e.Effect != capability.Parse || e.Hot || p.MaxInputBytes != limits.SniffToolMaxInputBytes {
		t.Fatalf("entry %+v policy %+v", e, p)
	}
	s := testkit.Session(t, rt, testkit.Grant(t, []string{"/srv/in"}, capability.Parse, capability.ReadFile))
	args := func(m map[string]any) json.RawMessage {
		data, _ := json.Marshal(m)
		return data
	}
	cases := []struct {
		name string
		args json.RawMessage
		code fault.Code
		want string // in the structured result or the error
	}{
		{"pdf by path", args(map[string]any{"path": "report.pdf", "expect": "pdf", "media_type": "application/pdf"}), "", `"signature_only"`},
		{"json inline", args(map[string]any{"text": `{"a":1}`, "expect": "json"}), "", `"detected":"json"`},
		{"login page", args(map[string]any{"path": "login.html", "expect": "json"}), fault.Integrity, "login wall"},
		{"bad expect", args(map[string]any{"text": "x", "expect": "yaml"}), fault.InvalidInput, ""},
		{"missing expect", args(map[string]any{"text": "x"}), fault.InvalidInput, ""},
		{"both", args(map[string]any{"text": "x", "path": "report.pdf", "expect": "pdf"}), fault.InvalidInput, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := testkit.Call(t, s, "sniff", c.args)
			if fault.CodeOf(err) != c.code {
				t.Fatalf("code %q (%v), want %q", fault.CodeOf(err), err, c.code)
			}
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = string(res.Structured)
			}
			if !strings.Contains(got, c.want) {
				t.Fatalf("got %s", got)
			}
		})
	}
}

func TestSniffInputBound(t *testing.T) {
	s := testkit.ToolSession(t, RegisterTools, nil, nil, capability.Parse)
	// 4 MiB of '<' (the HTML reader's limit), each escaped as \u003c.
	args := func(size int) json.RawMessage {
		return testkit.EscapedArgs(t, `"expect":"csv",`, limits.HTMLMaxBytes, size)
	}
	if _, err := testkit.Call(t, s, "sniff", args(limits.SniffToolMaxInputBytes)); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	if _, err := testkit.Call(t, s, "sniff", args(limits.SniffToolMaxInputBytes+1)); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one past the bound: %v", err)
	}
}
