package testkit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"text to echo"`
}

type echoOut struct {
	Echo     string `json:"echo"`
	Deadline bool   `json:"deadline"`
}

func registerEcho(b *kernel.Builder, prefix *string) error {
	return kernel.AddTool(b, kernel.Policy{Name: "echo"}, kernel.Meta{Effect: capability.Parse, Summary: "Echo text.", Description: "Echoes text. Example: {\"text\": \"hi\"}"},
		func(ctx context.Context, _ *kernel.Call, in echoArgs) (echoOut, error) {
			_, ok := ctx.Deadline()
			return echoOut{Echo: *prefix + in.Text, Deadline: ok}, nil
		})
}

func TestRuntimeSessionCall(t *testing.T) {
	prefix := "> "
	rt := Runtime(t, registerEcho, &prefix)
	s := Session(t, rt, Grant(t, []string{"/srv"}, capability.Parse))
	for _, args := range []any{`{"text":"hi"}`, json.RawMessage(`{"text":"hi"}`), map[string]string{"text": "hi"}} {
		res, err := Call(t, s, "echo", args)
		if err != nil || !strings.Contains(string(res.Structured), `"echo":"> hi"`) || !strings.Contains(string(res.Structured), `"deadline":true`) {
			t.Fatalf("%T: %v %v", args, res, err)
		}
	}
	if _, err := Call(t, Session(t, rt), "echo", `{"text":"hi"}`); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("ungranted call: %v", err)
	}
}

func TestEscapedArgs(t *testing.T) {
	args := EscapedArgs(t, `"a":1,`, 3, 40)
	var v struct {
		A    int    `json:"a"`
		Text string `json:"text"`
	}
	if len(args) != 40 || json.Unmarshal(args, &v) != nil || v.A != 1 || v.Text != "<<<" {
		t.Fatalf("%d bytes %q: %+v", len(args), args, v)
	}
	if got := EscapedArgs(t, "", 1, 17); len(got) != 17 {
		t.Fatalf("at the minimum size: %q", got)
	}
}
