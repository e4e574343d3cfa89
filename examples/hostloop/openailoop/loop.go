// Package openailoop is a host's agent loop against OpenAI's Chat
// Completions API, with capkit's tools: each turn offers the session's
// tools (strict), runs every tool call through hostloop.Loop.Call (which
// drops the nulls strict mode writes for arguments left out) and feeds the
// tool messages back, an image in a user message after them.
package openailoop

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/capkit/capkit/serve/hostloop"
)

// Params are one conversation's.
type Params struct {
	Model, System, Prompt string
	// MaxTurns bounds the requests; past it Run fails.
	MaxTurns int
}

// Run holds the conversation until the model answers without calling a
// tool, and returns it.
func Run(ctx context.Context, client openai.Client, loop *hostloop.Loop, p Params) ([]openai.ChatCompletionMessageParamUnion, error) {
	history := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(p.System), openai.UserMessage(p.Prompt)}
	for range p.MaxTurns {
		tools, err := toolsOf(loop) // again each turn: tool_search adds tools
		if err != nil {
			return history, err
		}
		resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: p.Model, Messages: history, Tools: tools})
		if err != nil {
			return history, err
		}
		if len(resp.Choices) == 0 {
			return history, fmt.Errorf("openailoop: a response without a choice")
		}
		m := resp.Choices[0].Message
		history = append(history, m.ToParam())
		if len(m.ToolCalls) == 0 {
			return history, nil
		}
		var images []openai.ChatCompletionMessageParamUnion
		for _, tc := range m.ToolCalls {
			r, err := loop.Call(ctx, []byte(tc.RawJSON()))
			if err != nil {
				return history, err
			}
			history = append(history, param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(r.Result)))
			if r.Extra != nil { // a tool message holds text only
				images = append(images, param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(r.Extra)))
			}
		}
		history = append(history, images...)
	}
	return history, fmt.Errorf("openailoop: no answer after %d requests", p.MaxTurns)
}

func toolsOf(loop *hostloop.Loop) ([]openai.ChatCompletionToolUnionParam, error) {
	defs, err := loop.Tools()
	if err != nil {
		return nil, err
	}
	tools := make([]openai.ChatCompletionToolUnionParam, len(defs))
	for i, d := range defs {
		tools[i] = param.Override[openai.ChatCompletionToolUnionParam](d)
	}
	return tools, nil
}
