package cli

import (
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is set at link time with -ldflags "-X github.com/capkit/capkit/internal/cli.Version=…".
var Version = "dev"

func newVersionCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print capkit's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := Version
			if bi, ok := debug.ReadBuildInfo(); ok && v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
				v = bi.Main.Version
			}
			return env.Print(map[string]string{"version": v}, "capkit "+v)
		},
	}
}
