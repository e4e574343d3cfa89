// Package responsesloop is a host's agent loop against OpenAI's Responses
// API, with capkit's tools: each turn offers the session's tools (strict),
// runs every function_call item through hostloop.Loop.Call and feeds the
// function_call_output items back after the model's own output.
package responsesloop

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/capkit/capkit/serve/hostloop"
)

// Params are one conversation's.
type Params struct {
	Model, System, Prompt string
	// MaxTurns bounds the requests; past it Run fails.
	MaxTurns int
}

// Run holds the conversation until the model answers without calling a
// tool, and returns its input items.
func Run(ctx context.Context, client openai.Client, loop *hostloop.Loop, p Params) (responses.ResponseInputParam, error) {
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(p.Prompt, responses.EasyInputMessageRoleUser)}
	for range p.MaxTurns {
		tools, err := toolsOf(loop) // again each turn: tool_search adds tools
		if err != nil {
			return input, err
		}
		resp, err := client.Responses.New(ctx, responses.ResponseNewParams{
			Model: p.Model, Instructions: openai.String(p.System), Tools: tools,
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
		})
		if err != nil {
			return input, err
		}
		called := false
		for _, item := range resp.Output {
			// The model's own items go back as they came, each call
			// followed by its output.
			input = append(input, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(item.RawJSON())))
			if item.Type != "function_call" {
				continue
			}
			r, err := loop.Call(ctx, []byte(item.RawJSON()))
			if err != nil {
				return input, err
			}
			input = append(input, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(r.Result)))
			called = true
		}
		if !called {
			return input, nil
		}
	}
	return input, fmt.Errorf("responsesloop: no answer after %d requests", p.MaxTurns)
}

func toolsOf(loop *hostloop.Loop) ([]responses.ToolUnionParam, error) {
	defs, err := loop.Tools()
	if err != nil {
		return nil, err
	}
	tools := make([]responses.ToolUnionParam, len(defs))
	for i, d := range defs {
		tools[i] = param.Override[responses.ToolUnionParam](d)
	}
	return tools, nil
}
