package mcpserver

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

type askIn struct {
	Question string `json:"question"`
}

// askRuntime has one tool, ask, that asks its caller's user (kernel.Confirm)
// and says what came back: yes, no, nobody (the caller cannot ask), or
// the error.
func askRuntime(t *testing.T) *kernel.Runtime {
	t.Helper()
	b := kernel.NewBuilder(nil)
	if err := kernel.AddTool(b, kernel.Policy{Name: "ask", MaxCalls: limits.HardMaxCalls},
		kernel.Meta{Effect: capability.ReadFile, Hot: true, Description: "Asks the user."},
		func(ctx context.Context, _ *kernel.Call, in askIn) (echoOut, error) {
			confirm := kernel.ConfirmOf(ctx)
			if confirm == nil {
				return echoOut{Echo: "nobody"}, nil
			}
			yes, err := confirm(ctx, in.Question)
			switch {
			case err != nil:
				return echoOut{Echo: "error: " + err.Error()}, nil
			case yes:
				return echoOut{Echo: "yes"}, nil
			}
			return echoOut{Echo: "no"}, nil
		}); err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// TestConfirmElicits: a tool's kernel.Confirm is an elicitation to a
// client that declared it, on every transport; the answer is yes only
// for an accepted form whose approve is true; a client without
// elicitation, or a session of the protocol that forbids requests while
// serving one, has no Confirm at all.
func TestConfirmElicits(t *testing.T) {
	answers := []struct {
		name string
		res  *mcp.ElicitResult
		want string
	}{
		{"approved", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, "yes"},
		{"accepted but not approved", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, "no"},
		{"declined", &mcp.ElicitResult{Action: "decline"}, "no"},
		{"cancelled", &mcp.ElicitResult{Action: "cancel"}, "no"},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			rt := askRuntime(t)
			s := New(rt, newSessionFunc(rt), nil)
			for _, a := range answers {
				var asked []string
				copts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					return a.res, nil
				}}
				cs := m.connect(t, s, copts, "2025-11-25")
				if got := text(t, call(t, cs, "ask", map[string]any{"question": "Trust it?"})); got != a.want {
					t.Errorf("%s: %q, want %q", a.name, got, a.want)
				}
				if len(asked) != 1 || asked[0] != "Trust it?" {
					t.Errorf("%s: the client was asked %q", a.name, asked)
				}
			}
			cs := m.connect(t, s, nil, "2025-11-25")
			if got := text(t, call(t, cs, "ask", map[string]any{"question": "Trust it?"})); got != "nobody" {
				t.Errorf("a client without elicitation: %q", got)
			}
		})
	}
	// The latest protocol forbids a request while serving one: no Confirm.
	rt := askRuntime(t)
	s := New(rt, newSessionFunc(rt), nil)
	copts := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		t.Error("asked on the latest protocol")
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}
	if got := text(t, call(t, connectSDK(t, s, copts, ""), "ask", map[string]any{"question": "q"})); got != "nobody" {
		t.Errorf("latest protocol: %q", got)
	}
}

// TestConfirmClientFails: a client whose elicitation handler fails gives
// an error, not a yes.
func TestConfirmClientFails(t *testing.T) {
	rt := askRuntime(t)
	s := New(rt, newSessionFunc(rt), nil)
	copts := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return nil, context.DeadlineExceeded
	}}
	got := text(t, call(t, connectStdio(t, s, copts, "2025-11-25"), "ask", map[string]any{"question": "q"}))
	if !strings.HasPrefix(got, "error: ") {
		t.Fatalf("a failing client: %q", got)
	}
}
