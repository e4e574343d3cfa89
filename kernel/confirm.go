package kernel

import "context"

// Confirm asks the person behind a call's caller a yes-or-no question
// (an MCP client's user, through elicitation) and reports whether they
// said yes. It blocks until they answer or ctx ends; an error means no
// answer came (the question is then taken as not approved).
type Confirm func(ctx context.Context, message string) (bool, error)

type confirmKey struct{}

// WithConfirm returns ctx carrying c, for the calls made with it: a front
// door whose caller can ask a person (an MCP client that declared
// elicitation) sets it.
func WithConfirm(ctx context.Context, c Confirm) context.Context {
	return context.WithValue(ctx, confirmKey{}, c)
}

// ConfirmOf is the Confirm a call's context carries, or nil when its
// caller cannot ask anyone.
func ConfirmOf(ctx context.Context) Confirm {
	c, _ := ctx.Value(confirmKey{}).(Confirm)
	return c
}
