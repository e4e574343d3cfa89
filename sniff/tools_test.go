package sniff

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// fakeReader serves files from a map, refusing sessions without read roots
// and files over the bound, as fs.FileReader implementations must.
type fakeReader map[string][]byte

func (f fakeReader) ReadFile(_ context.Context, caps capability.Set, path string, max int64) ([]byte, error) {
	if len(caps.Roots(capability.ReadFile)) == 0 {
		return nil, fault.New(fault.Denied, "no root is granted for this operation")
	}
	data, ok := f[path]
	if !ok {
		return nil, fault.New(fault.NotFound, "not found")
	}
	if int64(len(data)) > max {
		return nil, fault.LimitExceeded("file bytes", max, int64(len(data)))
	}
	return data, nil
}

func TestSniffTool(t *testing.T) {
	reader := fakeReader{"report.pdf": read(t, "testdata/report.pdf"), "login.html": read(t, "../htmldoc/testdata/screen_login.html")}
	b := kernel.NewBuilder(nil)
	if err := RegisterTools(b, &ToolOptions{Files: reader}); err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	e, _, ok := rt.Catalog().Lookup("sniff")
	if p, _ := rt.Policy("sniff"); !ok || e.Effect != capability.Parse || e.Hot || p.MaxInputBytes != limits.SniffToolMaxInputBytes {
		t.Fatalf("entry %+v policy %+v", e, p)
	}
	c, _ := capability.New("agent", []capability.Effect{capability.Parse, capability.ReadFile}, capability.Scope{Roots: []string{"/srv/in"}})
	s, err := rt.NewSession("agent", []capability.Capability{c}, nil)
	if err != nil {
		t.Fatal(err)
	}
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
			res, err := s.Call(context.Background(), "sniff", c.args)
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
	b := kernel.NewBuilder(nil)
	if err := RegisterTools(b, nil); err != nil {
		t.Fatal(err)
	}
	rt, _ := b.Build()
	c, _ := capability.New("agent", []capability.Effect{capability.Parse}, capability.Scope{})
	s, _ := rt.NewSession("agent", []capability.Capability{c}, nil)
	// arguments of exactly size bytes: 4 MiB of '<', each escaped as
	// \u003c, then padding whitespace.
	args := func(size int) json.RawMessage {
		var sb strings.Builder
		sb.WriteString(`{"expect":"csv","text":"` + strings.Repeat(`\u003c`, limits.HTMLMaxBytes) + `"`)
		sb.WriteString(strings.Repeat(" ", size-sb.Len()-1) + "}")
		return json.RawMessage(sb.String())
	}
	if _, err := s.Call(context.Background(), "sniff", args(limits.SniffToolMaxInputBytes)); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	if _, err := s.Call(context.Background(), "sniff", args(limits.SniffToolMaxInputBytes+1)); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one past the bound: %v", err)
	}
}
