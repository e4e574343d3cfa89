package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/kernel"
)

// approveSchema is the form a confirmation asks the user to fill: one
// yes-or-no answer, which must be yes for the question to be approved.
var approveSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "Yes to approve what the message describes."},
	},
	"required": []string{"approve"},
}

// withConfirm gives a call's context the kernel.Confirm of its session
// when the client can ask its user: it declared elicitation in form mode,
// and its protocol is older than 2026-07-28, from which a server may no
// longer send a request while serving one (see rootsRetiredVersion).
// Otherwise ctx is returned as is, and a tool that needs an answer gets
// none (a script's declassification is refused).
func withConfirm(ctx context.Context, ss *mcp.ServerSession) context.Context {
	if ss == nil {
		return ctx
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil || p.ProtocolVersion >= rootsRetiredVersion {
		return ctx
	}
	if e := p.Capabilities.Elicitation; e.Form == nil && e.URL != nil {
		return ctx // URL mode only: no form to answer in
	}
	return kernel.WithConfirm(ctx, func(ctx context.Context, message string) (bool, error) {
		res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: message, RequestedSchema: approveSchema})
		if err != nil {
			return false, err
		}
		yes, _ := res.Content["approve"].(bool)
		return res.Action == "accept" && yes, nil
	})
}
