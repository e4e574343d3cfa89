package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
)

// shoutIn and shoutOut are a typed tool's input and output: the input
// schema is inferred from the struct's json and jsonschema tags.
type shoutIn struct {
	Text string `json:"text" jsonschema:"the text to shout"`
}

type shoutOut struct {
	Text string `json:"text"`
}

// A typed tool: a handler of structs, registered with a policy and
// metadata. The kernel validates the arguments against the inferred schema
// before the handler runs, and bounds calls, bytes and time.
func ExampleAddTool() {
	b := kernel.NewBuilder(nil)
	err := kernel.AddTool(b, kernel.Policy{Name: "shout", MaxCalls: 2},
		kernel.Meta{Effect: capability.Parse, Hot: true, Summary: "Upper-case a text.",
			Description: `Returns the text in upper case. Example: {"text": "hello"}`},
		func(ctx context.Context, call *kernel.Call, in shoutIn) (shoutOut, error) {
			return shoutOut{Text: strings.ToUpper(in.Text)}, nil
		})
	if err != nil {
		panic(err)
	}
	rt, _ := b.Build()
	grant, _ := capability.New("model", []capability.Effect{capability.Parse}, capability.Scope{})
	s, _ := rt.NewSession("model", []capability.Capability{grant}, nil)

	res, _ := s.Call(context.Background(), "shout", json.RawMessage(`{"text": "hello"}`))
	fmt.Println(string(res.Structured))
	_, err = s.Call(context.Background(), "shout", json.RawMessage(`{"txt": "typo"}`))
	fmt.Println(fault.CodeOf(err))
	_, err = s.Call(context.Background(), "shout", json.RawMessage(`{"text": "third"}`))
	fmt.Println(fault.CodeOf(err))
	// Output:
	// {"text":"HELLO"}
	// invalid_input
	// limit
}

// The kernel's single call path: a session may call only the tools its
// capabilities grant; anything else is denied before a handler runs.
func ExampleSession_Call() {
	b := kernel.NewBuilder(nil)
	kernel.AddTool(b, kernel.Policy{Name: "write_note"}, kernel.Meta{Effect: capability.WriteFile, Summary: "Write a note.", Description: "Writes a note."},
		func(ctx context.Context, call *kernel.Call, in shoutIn) (shoutOut, error) { return shoutOut{}, nil })
	rt, _ := b.Build()
	readOnly, _ := capability.New("model", []capability.Effect{capability.ReadFile}, capability.Scope{Roots: []string{"/srv/docs"}})
	s, _ := rt.NewSession("model", []capability.Capability{readOnly}, nil)

	_, err := s.Call(context.Background(), "write_note", json.RawMessage(`{"text": "x"}`))
	fmt.Println(fault.CodeOf(err), fault.ExitCode(err))
	// Output:
	// denied 5
}
