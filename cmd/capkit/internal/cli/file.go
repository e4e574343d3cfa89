package cli

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/fileio"
	"github.com/capkit/capkit/limits"
)

func newFileCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "file",
		Short: "Read, digest or copy one regular file; never follows a symlink",
		Long: `Read, digest or copy one regular file. The last element of a path is never
followed if it is a symbolic link; directories, FIFOs and devices are refused;
a file that changes while it is read fails with exit code 9 (integrity).`,
	}
	cmd.AddCommand(newFileReadCmd(env), newFileDigestCmd(env), newFileCopyCmd(env))
	return cmd
}

func newFileReadCmd(env *Env) *cobra.Command {
	var maxBytes int64
	cmd := &cobra.Command{
		Use:   "read PATH",
		Short: "Write a whole file to standard output (at most " + limits.Bytes(limits.FileBufferedMaxBytes) + ")",
		Long: `Write a whole regular file to standard output, unchanged. A file larger than
--max-bytes fails with exit code 6 (limit) before anything is written. With
--json the result is {"size": N, "content": "<base64>"}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := absPath(args[0])
			if err != nil {
				return err
			}
			b, err := fileio.ReadFile(cmd.Context(), path, maxBytes)
			if err != nil {
				return err
			}
			if env.JSON {
				return env.Print(struct {
					Size    int    `json:"size"`
					Content []byte `json:"content"`
				}{len(b), b}, "")
			}
			_, err = env.Stdout.Write(b)
			return err
		},
	}
	cmd.Flags().Int64Var(&maxBytes, "max-bytes", limits.FileBufferedMaxBytes, "fail instead of reading a larger file (at most "+limits.Bytes(limits.FileBufferedMaxBytes)+")")
	return cmd
}

func newFileDigestCmd(env *Env) *cobra.Command {
	var maxBytes int64
	cmd := &cobra.Command{
		Use:   "digest PATH",
		Short: "Print a file's SHA-256 digest, as sha256sum does",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := absPath(args[0])
			if err != nil {
				return err
			}
			update, end := env.progress("sha256")
			s, err := fileio.Digest(cmd.Context(), path, maxBytes, &fileio.Options{Progress: update})
			end()
			if err != nil {
				return err
			}
			return env.Print(struct {
				Path string `json:"path"`
				fileio.Sum
			}{path, s}, fmt.Sprintf("%s  %s", s.SHA256, args[0]))
		},
	}
	cmd.Flags().Int64Var(&maxBytes, "max-bytes", math.MaxInt64, "fail instead of digesting a larger file")
	return cmd
}

func newFileCopyCmd(env *Env) *cobra.Command {
	var maxBytes int64
	cmd := &cobra.Command{
		Use:   "copy SRC DST",
		Short: "Copy a file to a new, private file; never overwrites",
		Long: `Copy a regular file to DST, which must not exist (exit code 4, conflict,
otherwise; nothing is replaced). The copy is written to a private temporary
file beside DST, flushed to disk and renamed into place, so DST appears
complete or not at all, with mode 0600.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := absPath(args[0])
			if err != nil {
				return err
			}
			dst, err := absPath(args[1])
			if err != nil {
				return err
			}
			update, end := env.progress("copy")
			n, err := fileio.Copy(cmd.Context(), src, dst, maxBytes, &fileio.Options{Progress: update})
			end()
			if err != nil {
				return err
			}
			return env.Print(map[string]any{"source": src, "destination": dst, "bytes": n},
				fmt.Sprintf("copied %d bytes to %s", n, args[1]))
		},
	}
	cmd.Flags().Int64Var(&maxBytes, "max-bytes", math.MaxInt64, "fail instead of copying a larger file")
	return cmd
}

// absPath makes a command-line path absolute: the user running capkit
// names paths relative to their working directory.
func absPath(p string) (string, error) {
	if p == "" {
		return "", fault.New(fault.InvalidInput, "path is empty")
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return "", fault.Wrap(fault.InvalidInput, err, "cannot make %q absolute", p)
	}
	return a, nil
}
