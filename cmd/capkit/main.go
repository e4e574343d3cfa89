// Command capkit serves capability-secured tools to AI agents over MCP and
// runs them from the command line. See README.md and docs/command-line.md for usage.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/capkit/capkit/cmd/capkit/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
