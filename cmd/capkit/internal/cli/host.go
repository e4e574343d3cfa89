package cli

import (
	"fmt"
	"github.com/capkit/capkit/audit"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/host"
	"github.com/capkit/capkit/host/config"
)

// hostFlags choose the runtime serve, tools and call use: the --config file
// (a global flag), or --root and --read-only directories, and the actor.
type hostFlags struct {
	roots, readOnly []string
	actor           string
	// discover: given neither --config nor --root/--read-only, use
	// ./capkit.toml if there is one. Commands a person runs in a project
	// discover; serve does not (its client picks the working directory).
	discover bool
}

// configFile is what discovery looks for in the working directory.
const configFile = "capkit.toml"

// discoverConfig makes ./capkit.toml the configuration when none is given
// and one is here, and says so on standard error.
func discoverConfig(env *Env) {
	if env.Config != "" || !configHere() {
		return
	}
	env.Config = configFile
	fmt.Fprintf(env.Stderr, "capkit: using ./%s (no --config given)\n", configFile)
}

func configHere() bool {
	_, err := os.Lstat(configFile)
	return err == nil
}

func (f *hostFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.roots, "root", nil, "without --config: a directory the file tools may read and write (repeatable)")
	cmd.Flags().StringArrayVar(&f.readOnly, "read-only", nil, "without --config: a directory the file tools may only read (repeatable)")
	cmd.Flags().StringVar(&f.actor, "actor", "", `the configured actor sessions run as (default: the only one, or "assistant")`)
}

// open builds the runtime and chooses the actor. log receives the trusted
// detail log when the configuration names no log file (nil discards it).
func (f *hostFlags) open(env *Env, log io.Writer) (*host.Host, string, error) {
	h, err := f.openHost(env, log)
	if err != nil {
		return nil, "", err
	}
	actor, err := f.chooseActor(h)
	if err != nil {
		h.Close()
		return nil, "", err
	}
	return h, actor, nil
}

// openHost builds the runtime, leaving the actor to choose.
func (f *hostFlags) openHost(env *Env, log io.Writer, sinks ...audit.Sink) (*host.Host, error) {
	cfg, err := f.config(env)
	if err != nil {
		return nil, err
	}
	h, err := host.New(cfg, &host.Options{Log: log, Version: Version, Sinks: sinks})
	if err != nil {
		return nil, setupFault(err)
	}
	for _, w := range h.Warnings {
		fmt.Fprintf(env.Stderr, "capkit: warning: %s\n", w)
	}
	return h, nil
}

// chooseActor is the actor --actor names, or the configuration's only or
// default one, once its capabilities are known to build.
func (f *hostFlags) chooseActor(h *host.Host) (string, error) {
	actor, err := h.Config.ActorName(f.actor)
	if err != nil {
		return "", err
	}
	if _, err := h.Capabilities(actor); err != nil {
		return "", err
	}
	return actor, nil
}

// config is the --config file, or the configuration of the --root and
// --read-only directories: the same for every command that takes them.
func (f *hostFlags) config(env *Env) (*config.Config, error) {
	var cfg *config.Config
	var err error
	if f.discover && len(f.roots)+len(f.readOnly) == 0 {
		discoverConfig(env)
	}
	if env.Config == "" && len(f.roots)+len(f.readOnly) == 0 && configHere() {
		return nil, fault.New(fault.InvalidInput, "give --config %s to use the configuration here (serve uses only the one it is given), or --root/--read-only directories", configFile)
	}
	if env.Config != "" {
		if len(f.roots)+len(f.readOnly) > 0 {
			return nil, fault.New(fault.InvalidInput, "give either --config or --root/--read-only, not both")
		}
		cfg, err = config.Load(env.Config)
	} else {
		cfg, err = config.FromFlags(f.roots, f.readOnly)
	}
	if err != nil {
		return nil, setupFault(err)
	}
	return cfg, nil
}

// setupFault reports configuration mistakes (located *config.Error
// values, one a line) as invalid_input, and anything else by its own code.
func setupFault(err error) error {
	if errs := config.Errors(err); len(errs) > 0 {
		return fault.New(fault.InvalidInput, "%s", err.Error())
	}
	return fault.As(err)
}
