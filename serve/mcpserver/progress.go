package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/kernel"
)

// progressTo is the kernel.Progress of a call whose client sent a
// progress token: each report becomes a notifications/progress to that
// client with the token, while the call runs. Tools bound the rate of
// what they report (another server's reports pass through bounded).
func progressTo(ctx context.Context, ss *mcp.ServerSession, token any) kernel.Progress {
	return func(progress, total float64, message string) {
		ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: progress, Total: total, Message: message})
	}
}
