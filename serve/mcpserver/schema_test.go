package mcpserver

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
)

// A tool whose schema does not resolve is left out of the list, with an
// error in the log, and calling it fails as internal; the other tools are
// listed and served.
func TestUnresolvableSchemaLeftOut(t *testing.T) {
	b := kernel.NewBuilder(nil)
	broken := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"x": {Type: "string", Pattern: "("}}}
	if err := b.Register(kernel.Policy{Name: "broken"}, kernel.Meta{Effect: capability.ReadFile, Hot: true, Description: "Broken."},
		broken, nil, func(context.Context, *kernel.Call) (*kernel.Result, error) { return &kernel.Result{Text: "ran"}, nil }); err != nil {
		t.Fatal(err)
	}
	if err := kernel.AddTool(b, kernel.Policy{Name: "echo"}, kernel.Meta{Effect: capability.ReadFile, Hot: true, Description: "Echoes."},
		func(_ context.Context, _ *kernel.Call, in echoIn) (echoOut, error) {
			return echoOut{Echo: in.Text}, nil
		}); err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	var log testkit.Buffer
	s := New(rt, newSessionFunc(rt), &Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
	cs := connectSDK(t, s, nil, "")
	tools := listNames(t, cs)
	if tools["broken"] != nil || tools["echo"] == nil {
		t.Fatalf("listed %v", tools)
	}
	if !strings.Contains(log.String(), "broken") || !strings.Contains(log.String(), "level=ERROR") {
		t.Errorf("log: %s", log.String())
	}
	if r := faultOf(t, call(t, cs, "broken", map[string]any{"x": "a"})); r.Code != fault.Internal {
		t.Errorf("call: %+v", r)
	}
	if got := text(t, call(t, cs, "echo", map[string]any{"text": "hi"})); got != "hi" {
		t.Errorf("echo: %q", got)
	}
}
