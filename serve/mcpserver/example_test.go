package mcpserver_test

import (
	"context"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/serve/mcpserver"
)

type greetIn struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

// A host serves a runtime's tools over MCP: every MCP session gets a new
// kernel session from the function it passes, so the client is held to
// that session's grants and budgets. Here a Go SDK client talks to
// ServeStdio over in-process pipes; `capkit serve` does the same on its
// standard input and output.
func ExampleServer_ServeStdio() {
	b := kernel.NewBuilder(nil)
	kernel.AddTool(b, kernel.Policy{Name: "greet"},
		kernel.Meta{Effect: capability.Parse, Hot: true, Summary: "Greet someone.", Description: `Returns a greeting. Example: {"name": "Ada"}`},
		func(ctx context.Context, call *kernel.Call, in greetIn) (greetOut, error) {
			return greetOut{Greeting: "Hello, " + in.Name}, nil
		})
	rt, _ := b.Build()
	grant, _ := capability.New("model", []capability.Effect{capability.Parse}, capability.Scope{})
	newSession := func(context.Context) (*kernel.Session, error) {
		return rt.NewSession("model", []capability.Capability{grant}, nil)
	}
	srv := mcpserver.New(rt, newSession, nil)

	toServer, clientOut := io.Pipe()
	clientIn, fromServer := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.ServeStdio(ctx, toServer, fromServer)

	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	tools, _ := cs.ListTools(ctx, nil)
	fmt.Println(tools.Tools[0].Name)
	res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// greet
	// {"greeting":"Hello, Ada"}
}
