package kernel

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/capability"
)

type shapeArgs struct {
	Path  string         `json:"path"`
	Limit int            `json:"limit,omitempty"`
	Edits []string       `json:"edits,omitempty"`
	Opts  map[string]any `json:"opts,omitempty"`
	Flag  *bool          `json:"flag,omitempty"`
}

// TestAuditShape: the call event carries each declared argument's type
// and length and counts the undeclared ones, and no value, member name
// inside a value, or undeclared name appears anywhere in the event.
func TestAuditShape(t *testing.T) {
	buf := &syncBuffer{}
	b := NewBuilder(&Options{Audit: slog.New(slog.NewJSONHandler(buf, nil))})
	err := AddTool(b, Policy{Name: "shaped"}, Meta{Effect: capability.ReadFile, Hot: true, Description: "Takes arguments."},
		func(context.Context, *Call, shapeArgs) (echoOut, error) { return echoOut{Echo: "ok"}, nil })
	if err != nil {
		t.Fatal(err)
	}
	open := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"path": {Type: "string"}}}
	err = b.Register(Policy{Name: "loose"}, Meta{Effect: capability.ReadFile, Hot: true, Description: "Takes anything."}, open, nil,
		func(context.Context, *Call) (*Result, error) { return Encode(echoOut{Echo: "ok"}) })
	if err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	s := session(t, rt, false, capability.ReadFile)
	args := `{"path":"/secret/é\u00e9\ud83d\ude00x","limit":987654321,"edits":["alpha","beta","gamma"],"opts":{"hidden-name":"v1","k":2},"flag":true}`
	if _, err := s.Call(context.Background(), "shaped", json.RawMessage(args)); err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(buf.String())
	var ev struct {
		Shape     map[string]string `json:"shape"`
		CallsLeft *int64            `json:"calls_left"`
	}
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"path": "string:" + itoa(len("/secret/éé😀x")), "limit": "number", "edits": "array:3", "opts": "object:2", "flag": "boolean"}
	if len(ev.Shape) != len(want) {
		t.Errorf("shape %v, want %v", ev.Shape, want)
	}
	for k, v := range want {
		if ev.Shape[k] != v {
			t.Errorf("shape[%s] = %q, want %q", k, ev.Shape[k], v)
		}
	}
	if ev.CallsLeft == nil || *ev.CallsLeft != 999 {
		t.Errorf("calls_left %v, want 999", ev.CallsLeft)
	}
	for _, secret := range []string{"secret", "987654321", "alpha", "hidden-name", "v1", "true"} {
		if strings.Contains(line, secret) {
			t.Errorf("the audit event holds %q: %s", secret, line)
		}
	}

	buf.b.Reset()
	if _, err := s.Call(context.Background(), "loose", json.RawMessage(`{"my-secret-key":1,"path":"p","other-name":{}}`)); err != nil {
		t.Fatal(err)
	}
	line = strings.TrimSpace(buf.String())
	ev.Shape = nil
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	if len(ev.Shape) != 2 || ev.Shape["path"] != "string:1" || ev.Shape["*"] != "undeclared:2" {
		t.Errorf("shape %v, want path and 2 undeclared", ev.Shape)
	}
	if strings.Contains(line, "secret") || strings.Contains(line, "other-name") {
		t.Errorf("an undeclared member's name is in the event: %s", line)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestAuditPolicy: a refusal's event names the policy that decided it and
// the calls left; the kernel's own refusals each name theirs.
func TestAuditPolicy(t *testing.T) {
	buf := &syncBuffer{}
	b := NewBuilder(&Options{Audit: slog.New(slog.NewJSONHandler(buf, nil))})
	if err := AddTool(b, Policy{Name: "echo", MaxCalls: 2, MaxInputBytes: 64}, Meta{Effect: capability.ReadFile, Hot: true, Description: "Echoes."}, echo); err != nil {
		t.Fatal(err)
	}
	if err := AddTool(b, Policy{Name: "writer"}, Meta{Effect: capability.WriteFile, Hot: true, Description: "Writes."}, echo); err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	s := session(t, rt, false, capability.ReadFile)
	ctx := context.Background()
	s.Call(ctx, "writer", json.RawMessage(`{"text":"x"}`))
	s.Call(ctx, "echo", json.RawMessage(`{"text":"`+strings.Repeat("x", 80)+`"}`))
	s.Call(ctx, "echo", json.RawMessage(`{"text":"x"}`))
	s.Call(ctx, "echo", json.RawMessage(`{"text":"x"}`))
	s.Call(ctx, "echo", json.RawMessage(`{"text":"x"}`))
	type event struct {
		Outcome, Policy string
		CallsLeft       int64 `json:"calls_left"`
	}
	want := []event{
		{"denied", "grant:write_file", 1000},
		{"limit", "max_input_bytes=64", 2},
		{"ok", "", 1},
		{"ok", "", 0},
		{"limit", "max_calls=2", 0},
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d events:\n%s", len(lines), buf.String())
	}
	for i, l := range lines {
		var got event
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatal(err)
		}
		if got != want[i] {
			t.Errorf("event %d: %+v, want %+v (%s)", i, got, want[i], l)
		}
	}
}

// FuzzStringBytes: the length argShape records is the length of the
// string the literal denotes, however it is escaped.
func FuzzStringBytes(f *testing.F) {
	for _, s := range []string{"", "a", `\u00e9`, `\ud83d\ude00`, `\ud83d`, `\udc00x`, `\n\t\"\\`, "é😀"} {
		f.Add(`"` + s + `"`)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		v := jsontext.Value(lit)
		if !v.IsValid() || v.Kind() != '"' {
			return
		}
		s, err := jsontext.AppendUnquote(nil, v)
		if err != nil {
			return
		}
		if got := stringBytes(v); got != len(s) {
			t.Errorf("stringBytes(%s) = %d, want %d", lit, got, len(s))
		}
	})
}
