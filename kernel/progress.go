package kernel

import "context"

// Progress receives a call's progress reports from its handler: how far
// it is (progress of total, total 0 when unknown) and a message. The
// front door that set it passes them to its caller (MCP
// notifications/progress); it must return promptly and may drop reports
// to bound their rate.
type Progress func(progress, total float64, message string)

type progressKey struct{}

// WithProgress returns ctx carrying p, for the calls made with it: a
// front door whose caller asked for progress (an MCP client's progress
// token) sets it.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// ProgressOf is the Progress a call's context carries, or nil when its
// caller asked for none.
func ProgressOf(ctx context.Context) Progress {
	p, _ := ctx.Value(progressKey{}).(Progress)
	return p
}
