package cli

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/policy"
	"github.com/capkit/capkit/limits"
)

// callResult is what `capkit call --json` prints.
type callResult struct {
	Text       string         `json:"text"`
	Structured jsontext.Value `json:"structured,omitempty"`
}

func newCallCmd(env *Env) *cobra.Command {
	hf := hostFlags{discover: true}
	cmd := &cobra.Command{
		Use:   "call TOOL [JSON|-]",
		Short: "Call one tool through the kernel and print its result",
		Long: `call runs one tool call as the actor, through the same kernel, policies,
grants and audit log as serve: JSON is the arguments object (default {}),
or - to read it from standard input. The result's text goes to standard
output; with --json, {"text": ..., "structured": ...}. A failure exits with
its fault's code (2 invalid_input, 3 not_found, 4 conflict, 5 denied,
6 limit, ...) and, since the caller is the host's own user, its full detail.

Each call is a new session: a file read by an earlier call does not count
as read, so edit_file and replacing a file with write_file end in conflict
(4) from here; use a script (capkit script run) for read-then-edit.

Examples:
  capkit call read_file '{"path": "README.md", "limit": 20}' --root .
  echo '{"pattern": "TODO", "literal": true}' | capkit call grep - --root .
  capkit call list_dir --config capkit.toml --actor reviewer --json`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, actor, err := hf.open(env, nil)
			if err != nil {
				return err
			}
			defer h.Close()
			tool := args[0]
			var in []byte
			switch {
			case len(args) == 1:
				in = []byte("{}")
			case args[1] == "-":
				// Read one byte past the tool's input bound, so the kernel
				// refuses an oversize input with limit instead of this
				// reading without end.
				bound := int64(limits.DefaultMaxInputBytes)
				if p, ok := h.Runtime.Policy(tool); ok {
					bound = p.MaxInputBytes
				}
				if in, err = io.ReadAll(io.LimitReader(env.Stdin, bound+1)); err != nil {
					return fault.Wrap(fault.IO, err, "reading the arguments from standard input failed")
				}
			default:
				in = []byte(args[1])
			}
			s, err := h.NewSession(actor, true)
			if err != nil {
				return err
			}
			res, err := s.Call(cmd.Context(), tool, json.RawMessage(in))
			if errors.Is(err, policy.ErrNotRead) {
				return fault.Wrap(fault.Conflict, err, "%s. capkit call runs each call in a session of its own, where no file has been read, so it never edits or replaces a file: read and edit in one session with capkit script run, or through the MCP server (capkit serve)", fault.As(err).Message)
			}
			if err != nil {
				return err
			}
			return env.Print(callResult{Text: res.Text, Structured: jsontext.Value(res.Structured)}, res.Text)
		},
	}
	hf.add(cmd)
	return cmd
}
