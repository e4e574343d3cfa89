// Package claudeloop is a host's agent loop against Anthropic's Messages
// API, with capkit's tools: each turn offers the session's tools (strict
// where the budget allows), runs every tool_use block through
// hostloop.Loop.Call and feeds the tool_result blocks back.
package claudeloop

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/capkit/capkit/serve/hostloop"
)

// Params are one conversation's.
type Params struct {
	Model, System, Prompt string
	MaxTokens             int64
	// MaxTurns bounds the requests; past it Run fails.
	MaxTurns int
}

// Run holds the conversation until the model answers without calling a
// tool, and returns it.
func Run(ctx context.Context, client anthropic.Client, loop *hostloop.Loop, p Params) ([]anthropic.MessageParam, error) {
	history := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(p.Prompt))}
	for range p.MaxTurns {
		tools, err := toolsOf(loop) // again each turn: tool_search adds tools
		if err != nil {
			return history, err
		}
		msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
			Model: anthropic.Model(p.Model), MaxTokens: p.MaxTokens,
			System: []anthropic.TextBlockParam{{Text: p.System}}, Messages: history, Tools: tools,
		})
		if err != nil {
			return history, err
		}
		history = append(history, msg.ToParam())
		var results []anthropic.ContentBlockParamUnion
		for _, block := range msg.Content {
			if block.Type != "tool_use" {
				continue
			}
			// A failure is a result too (is_error, "conflict: ..."): the
			// model reads it and acts on it.
			r, err := loop.Call(ctx, []byte(block.RawJSON()))
			if err != nil {
				return history, err
			}
			results = append(results, param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(r.Result)))
		}
		if len(results) == 0 {
			return history, nil
		}
		history = append(history, anthropic.NewUserMessage(results...))
	}
	return history, fmt.Errorf("claudeloop: no answer after %d requests", p.MaxTurns)
}

func toolsOf(loop *hostloop.Loop) ([]anthropic.ToolUnionParam, error) {
	defs, err := loop.Tools()
	if err != nil {
		return nil, err
	}
	tools := make([]anthropic.ToolUnionParam, len(defs))
	for i, d := range defs {
		tools[i] = param.Override[anthropic.ToolUnionParam](d)
	}
	return tools, nil
}
