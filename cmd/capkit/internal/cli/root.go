package cli

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
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

// group is a command group: the name of its command and the constructor
// of the command and its subcommands.
type group struct {
	name string
	new  func(*Env) *cobra.Command
}

// groups are the command groups, one per file. Add a group by adding its
// command's name and constructor here.
var groups = []group{
	{"version", newVersionCmd},
	{"serve", newServeCmd},
	{"tools", newToolsCmd},
	{"call", newCallCmd},
	{"catalog", newCatalogCmd},
	{"script", newScriptCmd},
	{"file", newFileCmd},
	{"tree", newTreeCmd},
	{"state", newStateCmd},
	{"clean", newCleanCmd},
	{"zip", newZipCmd},
	{"archive", newArchiveCmd},
	{"journal", newJournalCmd},
	{"audit", newAuditCmd},
	{"dashboard", newDashboardCmd},
	{"json", newJSONCmd},
	{"csv", newCSVCmd},
	{"html", newHTMLCmd},
	{"feed", newFeedCmd},
	{"sniff", newSniffCmd},
	{"fetch", newFetchCmd},
	{"budget", newBudgetCmd},
	{"run", newRunCmd},
	{"test", newTestCmd},
	{"semindex", newSemindexCmd},
	{"embed", newEmbedCmd},
	{"passages", newPassagesCmd},
	{"lexindex", newLexindexCmd},
	{"upstream", newUpstreamCmd},
}

// newRoot builds the command line for args. When args start with a
// group's name, only that group's commands are built: a command needs no
// other group, and building every group (flags, help texts) would slow
// every short command (bench/RESULTS.md, start-up). Anything else (help, a flag first, an
// unknown command) gets every group.
func newRoot(env *Env, args []string) *cobra.Command {
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
		// The kernel's audit events of an invocation name it as their
		// request ("capkit call"); its session tells invocations apart.
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			cmd.SetContext(kernel.WithRequest(cmd.Context(), cmd.CommandPath()))
		},
	}
	root.PersistentFlags().BoolVar(&env.JSON, "json", false, "print results as JSON")
	root.PersistentFlags().StringVar(&env.Config, "config", "", "path of a capkit.toml configuration (without it and without --root, tools, call, script run and test use ./capkit.toml; serve uses only the one it is given)")
	only := ""
	if len(args) > 0 && slices.ContainsFunc(groups, func(g group) bool { return g.name == args[0] }) {
		only = args[0]
	}
	for _, g := range groups {
		if only == "" || g.name == only {
			root.AddCommand(g.new(env))
		}
	}
	return root
}

// Main runs the command line and returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	root := newRoot(env, args)
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
	// The text an MCP client or a host's loop reads (the retry hint, then
	// the failed call's content on the lines after it), with the cause.
	text := "capkit: " + fe.Report(true).Text()
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	io.WriteString(stderr, text)
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
