// Package geminiloop is a host's agent loop against the Gemini API, with
// capkit's tools: each turn declares the session's tools (Gemini has no
// per-tool strict mode: the kernel's validation is the check), runs every
// functionCall through hostloop.Loop.Call and feeds the functionResponse
// parts back in one user turn, images after them.
package geminiloop

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/genai"

	"github.com/capkit/capkit/serve/hostloop"
)

// Params are one conversation's.
type Params struct {
	Model, System, Prompt string
	// MaxTurns bounds the requests; past it Run fails.
	MaxTurns int
}

// Run holds the conversation until the model answers without calling a
// function, and returns it.
func Run(ctx context.Context, client *genai.Client, loop *hostloop.Loop, p Params) ([]*genai.Content, error) {
	contents := []*genai.Content{genai.NewContentFromText(p.Prompt, genai.RoleUser)}
	for range p.MaxTurns {
		tools, err := toolsOf(loop) // again each turn: tool_search adds tools
		if err != nil {
			return contents, err
		}
		resp, err := client.Models.GenerateContent(ctx, p.Model, contents, &genai.GenerateContentConfig{
			SystemInstruction: genai.NewContentFromText(p.System, genai.RoleUser), Tools: tools,
		})
		if err != nil {
			return contents, err
		}
		if len(resp.Candidates) == 0 || resp.Candidates[0].Content == nil {
			return contents, fmt.Errorf("geminiloop: a response without a candidate")
		}
		contents = append(contents, resp.Candidates[0].Content)
		calls := resp.FunctionCalls()
		if len(calls) == 0 {
			return contents, nil
		}
		var parts, images []*genai.Part
		for _, fc := range calls {
			raw, err := json.Marshal(fc)
			if err != nil {
				return contents, err
			}
			r, err := loop.Call(ctx, raw)
			if err != nil {
				return contents, err
			}
			part, err := partOf(r.Result)
			if err != nil {
				return contents, err
			}
			parts = append(parts, part)
			if r.Extra != nil {
				img, err := partOf(r.Extra)
				if err != nil {
					return contents, err
				}
				images = append(images, img)
			}
		}
		contents = append(contents, &genai.Content{Role: genai.RoleUser, Parts: append(parts, images...)})
	}
	return contents, fmt.Errorf("geminiloop: no answer after %d requests", p.MaxTurns)
}

func partOf(raw json.RawMessage) (*genai.Part, error) {
	var p genai.Part
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

func toolsOf(loop *hostloop.Loop) ([]*genai.Tool, error) {
	defs, err := loop.Tools()
	if err != nil {
		return nil, err
	}
	decls := make([]*genai.FunctionDeclaration, len(defs))
	for i, d := range defs {
		decls[i] = new(genai.FunctionDeclaration)
		if err := json.Unmarshal(d, decls[i]); err != nil {
			return nil, err
		}
	}
	return []*genai.Tool{{FunctionDeclarations: decls}}, nil
}
