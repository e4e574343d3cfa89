package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/parse/textjson"
)

func newJSONCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "json",
		Short: "Validate JSON strictly and print its canonical form",
		Long: fmt.Sprintf(`Strict JSON: duplicate member names at any depth, NaN/Infinity and numbers
beyond the 64-bit float range, invalid UTF-8, a byte order mark and data after
the value are refused (exit 2) with line, column and byte offset; nesting
deeper than %d and input over --max-bytes (default %s, at most %s)
are refused with exit 6. Numbers keep their exact digits. FILE "-" reads
standard input.`, limits.JSONMaxDepth, limits.Bytes(limits.JSONDefaultBytes), limits.Bytes(limits.JSONMaxBytes)),
	}
	cmd.AddCommand(newJSONValidateCmd(env), newJSONCanonicalCmd(env))
	return cmd
}

func newJSONValidateCmd(env *Env) *cobra.Command {
	var maxBytes int64
	cmd := &cobra.Command{
		Use:   "validate FILE",
		Short: "Check that FILE holds one strictly valid JSON value",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readDocArg(env, args[0], jsonBound(maxBytes))
			if err != nil {
				return err
			}
			st, err := textjson.Validate(cmd.Context(), data, &textjson.JSONOptions{MaxBytes: maxBytes})
			if err != nil {
				return err
			}
			res := textjson.JSONResult{Valid: true, Stats: st}
			return env.Print(res, res.ToolText())
		},
	}
	cmd.Flags().Int64Var(&maxBytes, "max-bytes", 0, fmt.Sprintf("input byte limit (default %d, at most %d)", limits.JSONDefaultBytes, limits.JSONMaxBytes))
	return cmd
}

func newJSONCanonicalCmd(env *Env) *cobra.Command {
	var maxBytes int64
	cmd := &cobra.Command{
		Use:   "canonical FILE",
		Short: "Print FILE's JSON in canonical form: sorted members, no whitespace, exact numbers",
		Long: `Validate FILE like "json validate" and print its canonical form: members
ordered as RFC 8785 (JCS) orders them, no whitespace, minimal string escapes,
and numbers exactly as written (JCS would round them through float64). The
output is JSON with or without --json.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readDocArg(env, args[0], jsonBound(maxBytes))
			if err != nil {
				return err
			}
			out, _, err := textjson.Canonical(cmd.Context(), data, &textjson.JSONOptions{MaxBytes: maxBytes})
			if err != nil {
				return err
			}
			if _, err := env.Stdout.Write(append(out, '\n')); err != nil {
				return fault.Wrap(fault.IO, err, "writing the output failed")
			}
			return nil
		},
	}
	cmd.Flags().Int64Var(&maxBytes, "max-bytes", 0, fmt.Sprintf("input byte limit (default %d, at most %d)", limits.JSONDefaultBytes, limits.JSONMaxBytes))
	return cmd
}

// jsonBound is how much of the input to read: enough for the parser to
// tell an input over the configured limit, never more than the hard one.
func jsonBound(maxBytes int64) int64 {
	if maxBytes <= 0 || maxBytes > limits.JSONMaxBytes {
		return limits.JSONMaxBytes
	}
	return maxBytes
}

// readDocArg reads the document a command argument names, a file or "-"
// for standard input, failing with limit rather than reading more than
// max bytes.
func readDocArg(env *Env, path string, max int64) ([]byte, error) {
	var r io.Reader = env.Stdin
	name := "standard input"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fault.Wrap(fault.CodeOf(err), err, "%s cannot be opened", path)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return nil, fault.New(fault.InvalidInput, "%s is a directory", path)
		}
		r, name = f, path
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fault.Wrap(fault.IO, err, "reading %s failed", name)
	}
	if int64(len(data)) > max {
		return nil, fault.LimitExceeded(name+" bytes", max, 0)
	}
	return data, nil
}
