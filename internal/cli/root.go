// Package cli is the capkit command line: one file per command group, each
// returning a cobra command. Every command reports failure as a fault, and
// Main turns it into the fault's stable exit code.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
)

// Env is what commands share: standard streams and the global flags.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// JSON asks for results as JSON on standard output.
	JSON bool
	// Config is the path of the capkit.toml to use, if any.
	Config string
}

// groups are the command constructors, one per command group. Add a group
// by adding its constructor here.
var groups = []func(*Env) *cobra.Command{
	newVersionCmd,
	newServeCmd,
	newToolsCmd,
	newCallCmd,
	newCatalogCmd,
	newScriptCmd,
	newFileCmd,
	newTreeCmd,
	newStateCmd,
	newCleanCmd,
	newZipCmd,
	newJournalCmd,
	newJSONCmd,
	newCSVCmd,
	newHTMLCmd,
	newFeedCmd,
	newSniffCmd,
	newFetchCmd,
	newBudgetCmd,
	newRunCmd,
	newTestCmd,
	newSemindexCmd,
	newEmbedCmd,
	newPassagesCmd,
	newLexindexCmd,
}

func newRoot(env *Env) *cobra.Command {
	root := &cobra.Command{
		Use:   "capkit",
		Short: "Capability-secured tools for AI agents, over MCP and the command line",
		Long: `capkit gives a model real files, documents and indexes without giving it the
machine: the host decides which tools a model may call, and one kernel checks,
bounds and audits every call.

Exit codes: 0 success, 1 internal error, 2 invalid_input, 3 not_found,
4 conflict, 5 denied, 6 limit, 7 unavailable, 8 deferred, 9 integrity, 10 io,
11 http, 12 tls.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().BoolVar(&env.JSON, "json", false, "print results as JSON")
	root.PersistentFlags().StringVar(&env.Config, "config", "", "path of a capkit.toml configuration")
	for _, g := range groups {
		root.AddCommand(g(env))
	}
	return root
}

// Main runs the command line and returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if code, ok := sandboxHelper(args); ok {
		return code
	}
	env := &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	root := newRoot(env)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ce *commandExit
	if errors.As(err, &ce) {
		return ce.code
	}
	var fe *fault.Error
	if !errors.As(err, &fe) {
		// cobra's own errors are usage errors: unknown command or flag.
		fe = fault.New(fault.InvalidInput, "%s", err.Error())
	}
	if env.JSON {
		// One JSON object on standard output and nothing else, in the
		// shape of an MCP failure's _meta copy: one parser for both.
		env.writeJSON(env.Stdout, map[string]any{"error": fe.Report(true)})
		return fe.Code.ExitCode()
	}
	fmt.Fprintf(stderr, "capkit: %s: %s\n", fe.Code, fe.Error())
	return fe.Code.ExitCode()
}

// Print writes a result: v as JSON with --json, else the text.
func (env *Env) Print(v any, text string) error {
	if env.JSON {
		return env.writeJSON(env.Stdout, v)
	}
	if text == "" {
		return nil
	}
	if text[len(text)-1] != '\n' {
		text += "\n"
	}
	_, err := io.WriteString(env.Stdout, text)
	return err
}

func (env *Env) writeJSON(w io.Writer, v any) error {
	data, err := jsonv2.Marshal(v, jsonv2.Deterministic(true), jsontext.Multiline(true))
	if err != nil {
		return fault.Wrap(fault.Internal, err, "encoding the result failed")
	}
	data = append(data, '\n')
	_, err = w.Write(data)
	return err
}
