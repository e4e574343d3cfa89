package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/store/state"
)

func newStateCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Replace a state file atomically, or publish a staged directory without replacing anything",
	}
	cmd.AddCommand(newStateReplaceCmd(env), newStatePublishCmd(env))
	return cmd
}

func newStateReplaceCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "replace PATH",
		Short: "Replace PATH's content with standard input, atomically (at most " + limits.Bytes(limits.StateMaxBytes) + ")",
		Long: `Replace the content of the state file PATH with standard input, atomically:
after a crash at any moment PATH holds the old or the new content, never a mix.
PATH is created if missing and ends up private (mode 0600). A PATH that is a
symbolic link, directory or special file is refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := absPath(args[0])
			if err != nil {
				return err
			}
			data, err := io.ReadAll(io.LimitReader(env.Stdin, limits.StateMaxBytes+1))
			if err != nil {
				return fault.Wrap(fault.IO, err, "reading standard input failed")
			}
			if len(data) > limits.StateMaxBytes {
				return fault.New(fault.Limit, "state on standard input exceeds the limit of %d bytes; nothing was replaced", limits.StateMaxBytes)
			}
			if err := state.Replace(cmd.Context(), path, data); err != nil {
				return err
			}
			return env.Print(map[string]any{"path": path, "bytes": len(data)},
				fmt.Sprintf("replaced %s (%d bytes)", args[0], len(data)))
		},
	}
}

func newStatePublishCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "publish STAGING DEST",
		Short: "Rename the staged directory STAGING to DEST, which must not exist",
		Long: `Flush every file of the staged directory STAGING to disk, then rename it to
DEST in one atomic step that never replaces anything: an existing DEST fails
with exit code 4 (conflict). STAGING and DEST must be in the same directory.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			staging, err := absPath(args[0])
			if err != nil {
				return err
			}
			dest, err := absPath(args[1])
			if err != nil {
				return err
			}
			if err := state.Publish(cmd.Context(), staging, dest, nil); err != nil {
				return err
			}
			return env.Print(map[string]any{"staging": staging, "destination": dest},
				fmt.Sprintf("published %s", args[1]))
		},
	}
}
