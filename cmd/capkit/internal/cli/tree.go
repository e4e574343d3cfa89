package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/files/tree"
	"github.com/capkit/capkit/limits"
)

func newTreeCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tree",
		Short: "Metadata of a path or a directory tree; no content is read",
	}
	cmd.AddCommand(newTreeStampCmd(env), newTreeListCmd(env))
	return cmd
}

func newTreeStampCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "stamp PATH",
		Short: "Print the type, mode, size, times and inode of PATH (a symlink is not followed)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := absPath(args[0])
			if err != nil {
				return err
			}
			s, err := tree.StampOf(path)
			if err != nil {
				return err
			}
			return env.Print(struct {
				Path string `json:"path"`
				tree.Stamp
			}{path, s}, fmt.Sprintf("%s %s", s.ToolText(), args[0]))
		},
	}
}

func newTreeListCmd(env *Env) *cobra.Command {
	var o tree.Options
	cmd := &cobra.Command{
		Use:   "list PATH",
		Short: "List the files and directories below PATH; symlinks and special files are left out and counted",
		Long: `List the files and directories below the directory PATH, depth first, one
line "TYPE MODE SIZE MTIME PATH" each, then a summary. Symbolic links and special
files are left out and counted; links are never followed. A tree over a bound
fails with exit code 6 (limit) instead of printing a shorter list.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := absPath(args[0])
			if err != nil {
				return err
			}
			l, err := tree.List(cmd.Context(), path, &o)
			if err != nil {
				return err
			}
			return env.Print(l, l.Text())
		},
	}
	cmd.Flags().IntVar(&o.MaxEntries, "max-entries", 0, fmt.Sprintf("fail on a tree with more names (default %d, at most %d)", limits.TreeDefaultEntries, limits.TreeHardEntries))
	cmd.Flags().Int64Var(&o.MaxBytes, "max-bytes", 0, "fail on a tree whose files hold more bytes (default "+limits.Bytes(limits.TreeDefaultBytes)+")")
	cmd.Flags().IntVar(&o.MaxDepth, "max-depth", 0, fmt.Sprintf("fail on a tree deeper than this (default %d, at most %d)", limits.TreeDefaultDepth, limits.TreeHardDepth))
	return cmd
}
