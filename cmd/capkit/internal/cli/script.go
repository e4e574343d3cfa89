package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/host"
	"github.com/capkit/capkit/host/config"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/serve/script"
)

func newScriptCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "script",
		Short: "Run Starlark workflows over capkit's tools",
		Long: `A script is a Starlark (Python-like) program whose only way out is
tool.call(name, arg): every call goes through the kernel as the configured
actor, under the same capabilities, budgets and audit as a model's calls.
Scripts are bounded in steps, time, memory and result size (exit 6, limit).
With [script] enabled = true in capkit.toml, capkit serve also offers the
run_script tool, so a model can run a bounded workflow as one call.`,
	}
	cmd.AddCommand(newScriptRunCmd(env), newScriptWorkerCmd())
	return cmd
}

func newScriptRunCmd(env *Env) *cobra.Command {
	hf := hostFlags{discover: true}
	var timeout time.Duration
	var maxSteps uint64
	run := &cobra.Command{
		Use:   "run FILE.star",
		Short: "Run a script and print its result global as JSON",
		Long: `run executes FILE.star as actor NAME of the --config file (or, without one,
as the default actor over the --root and --read-only directories) and prints
the value of the script's global "result" as JSON (null when unset). A
failed tool call or a broken bound ends the script and capkit exits with
that fault's code (3 not_found, 5 denied, 6 limit, ...). print() output goes
to stderr; failure detail the script is not shown goes to the log (stderr
without one). The script runs in a separate worker process whose memory is
bounded.

Example (todo.star):
  hits = tool.call("grep", {"pattern": "TODO", "literal": True})
  result = {"matching_lines": hits["shown"]}

  capkit script run todo.star --root .
  {"matching_lines":2}`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := readScript(args[0])
			if err != nil {
				return err
			}
			cfg, err := hf.config(env)
			if err != nil {
				return err
			}
			sess, h, err := scriptSession(env, cfg, hf.actor)
			if err != nil {
				return err
			}
			defer h.Close()
			opts := h.ScriptOptions()
			if timeout != 0 {
				opts.Timeout = timeout
			}
			if maxSteps != 0 {
				opts.MaxSteps = maxSteps
			}
			opts.Filename = filepath.Base(args[0])
			opts.Print = func(msg string) { fmt.Fprintln(env.Stderr, msg) }
			if opts.Worker, err = host.Worker(); err != nil {
				return err
			}
			res, err := script.Run(cmd.Context(), sess, src, &opts)
			if err != nil {
				return err
			}
			return env.Print(jsontext.Value(res.Value), string(res.Value))
		},
	}
	hf.add(run)
	run.Flags().DurationVar(&timeout, "timeout", 0, "wall-clock bound (default [script] timeout, else "+limits.Duration(limits.ScriptDefaultTimeout)+")")
	run.Flags().Uint64Var(&maxSteps, "max-steps", 0, fmt.Sprintf("Starlark step bound (default [script] max_steps, else %d)", limits.ScriptDefaultSteps))
	return run
}

// newScriptWorkerCmd is the hidden command a script's worker process runs.
func newScriptWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "worker",
		Short:  "Serve one script to a parent capkit process (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return script.ServeWorker(cmd.Context())
		},
	}
}

func readScript(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fault.Wrap(fault.CodeOf(err), err, "script %s cannot be opened", path)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fault.New(fault.InvalidInput, "script %s is not a regular file", path)
	}
	src, err := io.ReadAll(io.LimitReader(f, limits.ScriptMaxSourceBytes+1))
	if err != nil {
		return nil, fault.Wrap(fault.IO, err, "script %s cannot be read", path)
	}
	if len(src) > limits.ScriptMaxSourceBytes {
		return nil, fault.LimitExceeded("script "+path+" bytes", limits.ScriptMaxSourceBytes, 0)
	}
	return src, nil
}

// scriptSession builds the runtime serve would build from cfg (through
// internal/setup) and an untrusted session for the actor: the script sees
// what a model would, and the failure detail goes to the log (stderr when
// the configuration names none). Close the host when done.
func scriptSession(env *Env, cfg *config.Config, actorFlag string) (*kernel.Session, *host.Host, error) {
	h, err := host.New(cfg, &host.Options{Log: env.Stderr, Version: Version})
	if err != nil {
		return nil, nil, setupFault(err)
	}
	actor, err := cfg.ActorName(actorFlag)
	if err == nil {
		var sess *kernel.Session
		if sess, err = h.NewSession(actor, false); err == nil {
			return sess, h, nil
		}
	}
	h.Close()
	return nil, nil, err
}
