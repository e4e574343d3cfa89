package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/host"
	"github.com/capkit/capkit/host/config"
	"github.com/capkit/capkit/limits"
	// Aliased: this package's tests have a helper named run.
	contained "github.com/capkit/capkit/run"
	"github.com/capkit/capkit/run/sandbox"
)

const runExitHelp = `capkit exits with the command's own exit code (128 plus the signal's number
when a signal ended it), or with a fault's code when the command could not
be run: 2 invalid_input, 5 denied (also when the command created a
protected path that was missing, such as .git or capkit.toml: it was moved
out of the root into the quarantine, which the message names), 6 limit
(past --timeout; every process the command started was killed), 7
unavailable (no container here, or containment = "required" and only
reduced containment is possible). A fault is also written to stderr as
"capkit: CODE: message", with "(retry after Ns)" when a retry may be
admitted later.`

func newRunCmd(env *Env) *cobra.Command {
	var roots, readOnly []string
	var timeout time.Duration
	var requireFull bool
	cmd := &cobra.Command{
		Use:   "run (--root DIR [--read-only DIR] | --config capkit.toml) [--timeout D] -- CMD [ARG...]",
		Short: "Run a command in a container over the given roots",
		Long: fmt.Sprintf(`run executes CMD in the container run_shell uses: the system directories
read-only, the --root directories read-write (with .git and capkit.toml
read-only), the --read-only directories read-only, a private /tmp, no
network, no other process, no capability. Its stdout and stderr are passed
through, each kept to %d bytes (its head and tail around a marker stating
the bytes left out).

With --config, the configuration's roots and [run] settings apply as
capkit serve applies them (limits, env, caches, [run] network: a network
through capkit's policy proxy alone), and CMD runs in the working
directory when that lies in a root (else in the first writable root).
What the proxy refused is noted on standard error.

%s

Example:
  capkit run --root . --timeout 2m -- go vet ./...`, limits.RunDefaultOutputBytes, runExitHelp),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, cwd, err := runConfig(env, roots, readOnly)
			if err != nil {
				return err
			}
			caps, err := rootCaps(cfg, capability.RunShell)
			if err != nil {
				return err
			}
			if timeout < 0 || timeout > limits.RunHardTimeout {
				return fault.New(fault.InvalidInput, "--timeout %v is outside (0, %v]", timeout, limits.RunHardTimeout)
			}
			rc := cfg.RunOptions()
			rc.RequireFull = rc.RequireFull || requireFull
			return runContained(env, cmd, cfg, rc, func(r *contained.Runner) (*contained.Outcome, error) {
				return r.Command(cmd.Context(), caps, capability.RunShell, args, cwd, nil, timeout)
			})
		},
	}
	cmd.Flags().StringSliceVar(&roots, "root", nil, "a writable root directory (repeatable; default .)")
	cmd.Flags().StringSliceVar(&readOnly, "read-only", nil, "a read-only root directory (repeatable)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, fmt.Sprintf("wall-clock bound (default %v, at most %v)", limits.RunDefaultTimeout, limits.RunHardTimeout))
	cmd.Flags().BoolVar(&requireFull, "require-full", false, "fail (exit 7) rather than run without namespaces")
	return cmd
}

func newTestCmd(env *Env) *cobra.Command {
	var build bool
	cmd := &cobra.Command{
		Use:   "test [--config capkit.toml] [NAME] [-- ARG...]",
		Short: "Run the test (or build) command capkit.toml declares, contained",
		Long: fmt.Sprintf(`test runs the command [test] declares in the --config file, or in
./capkit.toml without one (standard error says so); NAME picks a
[test.variant.NAME] and --build runs [build] instead. It runs in the
container run_test uses, over the configuration's roots, with its [run]
settings.
Extra arguments after -- must match the command's args pattern.

%s

Example:
  capkit test --config capkit.toml race -- -run=TestParse`, runExitHelp),
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			discoverConfig(env)
			if env.Config == "" {
				return fault.New(fault.InvalidInput, "give the --config file that declares the command (there is no ./%s here)", configFile)
			}
			cfg, err := config.Load(env.Config)
			if err != nil {
				return setupFault(err)
			}
			name, extra := "", args
			if n := cmd.ArgsLenAtDash(); n != 0 && len(args) > 0 {
				name, extra = args[0], args[1:]
				if n > 1 {
					return fault.New(fault.InvalidInput, "give at most one NAME before --")
				}
			}
			caps, err := rootCaps(cfg, capability.RunTest)
			if err != nil {
				return err
			}
			kind := "test"
			if build {
				kind = "build"
			}
			return runContained(env, cmd, cfg, cfg.RunOptions(), func(r *contained.Runner) (*contained.Outcome, error) {
				return r.Declared(cmd.Context(), caps, kind, name, extra, "")
			})
		},
	}
	cmd.Flags().BoolVar(&build, "build", false, "run the [build] command instead of [test]")
	return cmd
}

// rootCaps grants effect on the configuration's writable roots and
// read_file on all of them: the CLI runs as its user, not as an actor.
func rootCaps(cfg *config.Config, effect capability.Effect) (capability.Set, error) {
	var rw, all []string
	for _, r := range cfg.Roots {
		all = append(all, r.Dir)
		if !r.ReadOnly {
			rw = append(rw, r.Dir)
		}
	}
	if len(rw) == 0 {
		return nil, fault.New(fault.InvalidInput, "no writable root: a command runs in one")
	}
	w, err := capability.New("cli", []capability.Effect{effect}, capability.Scope{Roots: rw})
	if err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "roots")
	}
	r, err := capability.New("cli", []capability.Effect{capability.ReadFile}, capability.Scope{Roots: all})
	if err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "roots")
	}
	return capability.Set{w, r}, nil
}

// runConfig is capkit run's configuration: the --config file's, with
// the working directory when it lies in one of its roots ("": the first
// writable root), or the --root and --read-only directories' (default
// --root .).
func runConfig(env *Env, roots, readOnly []string) (*config.Config, string, error) {
	if env.Config == "" {
		if len(roots) == 0 {
			roots = []string{"."}
		}
		cfg, err := config.FromFlags(roots, readOnly)
		if err != nil {
			return nil, "", setupFault(err)
		}
		return cfg, "", nil
	}
	if len(roots)+len(readOnly) > 0 {
		return nil, "", fault.New(fault.InvalidInput, "give either --config or --root/--read-only, not both")
	}
	cfg, err := config.Load(env.Config)
	if err != nil {
		return nil, "", setupFault(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return cfg, "", nil
	}
	for _, r := range cfg.Roots {
		for _, d := range []string{wd, realPath(wd)} {
			if capability.Within(r.Dir, d) {
				return cfg, d, nil
			}
		}
	}
	return cfg, "", nil
}

// realPath is p with its symbolic links resolved, or p.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// runContained runs one command, with cfg's [run] network, and passes
// its result through.
func runContained(env *Env, cmd *cobra.Command, cfg *config.Config, rc contained.Config, do func(*contained.Runner) (*contained.Outcome, error)) error {
	helper, err := host.SandboxHelper()
	if err != nil {
		return err
	}
	proxy, closeNetwork, err := host.RunNetwork(cmd.Context(), cfg, nil, nil)
	if err != nil {
		return err
	}
	defer closeNetwork()
	rc.Network = proxy
	o, err := do(contained.NewRunner(helper, &contained.RunnerOptions{Config: rc}))
	if err != nil {
		if o != nil && !env.JSON {
			io.WriteString(env.Stdout, o.Result.Stdout.Text)
			io.WriteString(env.Stderr, o.Result.Stderr.Text)
		}
		return err
	}
	res := o.Result
	if env.JSON {
		r := contained.ResultOf(o)
		if err := env.writeJSON(env.Stdout, map[string]any{"result": r, "stdout": r.Stdout(), "stderr": r.Stderr()}); err != nil {
			return err
		}
	} else {
		io.WriteString(env.Stdout, res.Stdout.Text)
		io.WriteString(env.Stderr, res.Stderr.Text)
		if res.Containment == sandbox.Reduced {
			for _, n := range res.Notes {
				fmt.Fprintf(env.Stderr, "capkit: note: %s\n", n)
			}
		}
		if res.ExitCode != 0 || res.Signal != "" {
			for _, d := range res.Closed {
				fmt.Fprintf(env.Stderr, "capkit: note: %s\n", sandbox.ClosedNote(d))
			}
		}
		for _, n := range res.Network {
			fmt.Fprintf(env.Stderr, "capkit: note: %s\n", n)
		}
	}
	code := res.ExitCode
	if res.Signal != "" {
		code = 128 + int(unix.SignalNum(res.Signal))
	}
	if code != 0 {
		return &commandExit{code: code}
	}
	return nil
}

// commandExit is a contained command's own non-zero exit: Main exits with
// its code and prints no fault.
type commandExit struct{ code int }

func (e *commandExit) Error() string { return fmt.Sprintf("the command exited with %d", e.code) }
