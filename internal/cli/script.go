package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"

	"github.com/capkit/capkit/config"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/filecatalog"
	"github.com/capkit/capkit/fstools"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/script"
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
	var actor string
	var roots, readOnly []string
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
to stderr, failure detail that the script is not shown to the log (stderr
without one). The script runs in a separate worker process whose memory is
bounded.

Example (grep.star):
  hits = tool.call("grep", {"pattern": "TODO", "literal": True}, text=True)
  result = {"lines": len(hits.splitlines())}

  capkit script run grep.star --root .
  {"lines":3}`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := readScript(args[0])
			if err != nil {
				return err
			}
			var cfg *config.Config
			if env.Config != "" {
				if len(roots)+len(readOnly) > 0 {
					return fault.New(fault.InvalidInput, "give either --config or --root/--read-only, not both")
				}
				cfg, err = config.Load(env.Config)
			} else {
				if len(roots)+len(readOnly) == 0 {
					roots = []string{"."}
				}
				cfg, err = config.FromFlags(roots, readOnly)
			}
			if err != nil {
				return configFault(err)
			}
			sess, closeRT, err := scriptSession(env, cfg, actor)
			if err != nil {
				return err
			}
			defer closeRT()
			opts := cfg.Script.Options()
			if timeout != 0 {
				opts.Timeout = timeout
			}
			if maxSteps != 0 {
				opts.MaxSteps = maxSteps
			}
			opts.Filename = filepath.Base(args[0])
			opts.Print = func(msg string) { fmt.Fprintln(env.Stderr, msg) }
			if opts.Worker, err = selfWorker(); err != nil {
				return err
			}
			res, err := script.Run(cmd.Context(), sess, src, &opts)
			if err != nil {
				return err
			}
			return env.Print(jsontext.Value(res.Value), string(res.Value))
		},
	}
	run.Flags().StringVar(&actor, "actor", "", "the configured actor to run as (default: the only one, or \"assistant\")")
	run.Flags().StringSliceVar(&roots, "root", nil, "without --config: a writable root directory (repeatable; default .)")
	run.Flags().StringSliceVar(&readOnly, "read-only", nil, "without --config: a read-only root directory (repeatable)")
	run.Flags().DurationVar(&timeout, "timeout", 0, "wall-clock bound (default [script] timeout, else 30s)")
	run.Flags().Uint64Var(&maxSteps, "max-steps", 0, "Starlark step bound (default [script] max_steps, else 10000000)")
	cmd.AddCommand(run)
	cmd.AddCommand(&cobra.Command{
		Use:    "worker",
		Short:  "Serve one script to a parent capkit process (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return script.ServeWorker(cmd.Context())
		},
	})
	return cmd
}

// selfWorker runs scripts in this executable's hidden `script worker`.
func selfWorker() (*script.Worker, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "cannot locate the capkit executable for the script worker")
	}
	return &script.Worker{Command: []string{exe, "script", "worker"}}, nil
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

// scriptSession composes the runtime a script runs in: the file tools and
// the configured catalogs, per-tool policies from [tool.NAME], the audit
// log, and an untrusted session for the actor (the script sees what a
// model would; the detail goes to the log, stderr without one).
//
// TODO(setup): replace with internal/setup's composition once it exists,
// so `script run` and `serve` build the same runtime.
func scriptSession(env *Env, cfg *config.Config, actorFlag string) (*kernel.Session, func(), error) {
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	opts := &kernel.Options{
		Log: slog.New(slog.NewTextHandler(env.Stderr, nil)),
		PolicyOverride: func(p kernel.Policy) kernel.Policy {
			if t, ok := cfg.Tools[p.Name]; ok {
				if t.MaxCalls != 0 {
					p.MaxCalls = t.MaxCalls
				}
				if t.MaxInputBytes != 0 {
					p.MaxInputBytes = t.MaxInputBytes
				}
				if t.MaxOutputBytes != 0 {
					p.MaxOutputBytes = t.MaxOutputBytes
				}
				if t.Timeout != 0 {
					p.Timeout = time.Duration(t.Timeout)
				}
			}
			return p
		},
	}
	for _, l := range []struct {
		path string
		dst  **slog.Logger
	}{{cfg.Log, &opts.Log}, {cfg.AuditLog, &opts.Audit}} {
		if l.path == "" {
			continue
		}
		f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			closeAll()
			return nil, nil, fault.Wrap(fault.CodeOf(err), err, "log %s cannot be opened", l.path)
		}
		closers = append(closers, func() { f.Close() })
		*l.dst = slog.New(slog.NewJSONHandler(f, nil))
	}
	b := kernel.NewBuilder(opts)
	if err := fstools.RegisterTools(b, nil); err != nil {
		closeAll()
		return nil, nil, fault.Wrap(fault.Internal, err, "registering the file tools failed")
	}
	if err := registerCatalogs(b, cfg, &closers); err != nil {
		closeAll()
		return nil, nil, err
	}
	rt, err := b.Build()
	if err != nil {
		closeAll()
		return nil, nil, fault.Wrap(fault.Internal, err, "building the runtime failed")
	}
	actor, err := cfg.ActorName(actorFlag)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	caps, err := cfg.Capabilities(actor)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	sess, err := rt.NewSession(actor, caps, nil)
	if err != nil {
		closeAll()
		return nil, nil, fault.Wrap(fault.Internal, err, "starting the session failed")
	}
	return sess, closeAll, nil
}

// registerCatalogs opens each configured catalog and registers it as the
// tool of its name. This is the registration internal/setup needs too.
func registerCatalogs(b *kernel.Builder, cfg *config.Config, closers *[]func()) error {
	for _, name := range cfg.CatalogNames() {
		cat, err := cfg.OpenCatalog(name)
		if err != nil {
			return configFault(err)
		}
		*closers = append(*closers, func() { cat.Close() })
		cc := cfg.Catalogs[name]
		if err := filecatalog.RegisterTool(b, kernel.Policy{Name: name}, kernel.Meta{Summary: cc.Summary, Description: cc.Description}, cat); err != nil {
			return fault.Wrap(fault.InvalidInput, err, "catalog %s cannot be registered: %v", name, err)
		}
	}
	return nil
}
