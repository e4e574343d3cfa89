package script

import (
	"context"
	"fmt"
	"strings"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// AskUser is a Provenance.Declassify hook that asks the person behind
// the script's caller (kernel.ConfirmOf: the MCP client's user, through
// elicitation) whether to trust the value, showing the script's reason,
// where the value came from, and the value (its JSON, at most
// limits.ScriptDeclassifyShownBytes). With nobody to ask (no
// kernel.Confirm in the context: an MCP client without elicitation, the
// command line) it refuses, denied.
func AskUser(ctx context.Context, d Declassification) (bool, error) {
	ask := kernel.ConfirmOf(ctx)
	if ask == nil {
		return false, fault.New(fault.Denied, "nobody can be asked: the caller's client does not support elicitation")
	}
	return ask(ctx, d.Question())
}

// Question is what AskUser asks: the reason, the sources, the position in
// the script and the value, bounded.
func (d Declassification) Question() string {
	return fmt.Sprintf("A script asks to trust data it read from %s, so that it may decide what the script changes or sends.\n"+
		"Its reason: %s\nAt: %s\nThe value: %s\nApprove only if you trust this value for that purpose.",
		strings.Join(d.Sources, ", "), clip.N(d.Reason, limits.ScriptDeclassifyShownBytes), d.At,
		clip.N(string(d.Value), limits.ScriptDeclassifyShownBytes))
}
