package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
)

func newCleanCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "clean ROOT",
		Short: "Remove the staging files a crashed writer left below ROOT",
		Long: fmt.Sprintf(`Remove the stale staging entries (names starting with %q) below the directory
ROOT: content a capkit writer was writing when it was killed. A staging file
whose writer still runs is locked by it and left alone; the tools never show or
serve staging files either way, and a writer starting in a directory removes
that directory's stale ones itself. Symbolic links are never followed and
pseudo-filesystems are not entered; at most %d names, %d levels deep (exit code 6,
limit, past either, after removing what it found).`, scope.StagingPrefix, limits.TreeHardEntries, limits.TreeHardDepth),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := absPath(args[0])
			if err != nil {
				return err
			}
			n, err := scope.Clean(cmd.Context(), root)
			if err != nil {
				if n > 0 {
					fmt.Fprintf(env.Stderr, "capkit: removed %d stale staging entries before stopping\n", n)
				}
				return err
			}
			return env.Print(struct {
				Root    string `json:"root"`
				Removed int    `json:"removed"`
			}{root, n}, fmt.Sprintf("removed %d stale staging entries below %s", n, args[0]))
		},
	}
}
