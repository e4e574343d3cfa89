package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/policy"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/serve/hostloop"
)

// callResult is what `capkit call --json` prints.
type callResult struct {
	Text       string         `json:"text"`
	Structured jsontext.Value `json:"structured,omitempty"`
	// Content are the result's content blocks when it has more than its
	// text (another MCP server's images, resource links, ...).
	Content []jsontext.Value `json:"content,omitempty"`
}

func newCallCmd(env *Env) *cobra.Command {
	hf := hostFlags{discover: true}
	var from string
	var strict bool
	cmd := &cobra.Command{
		Use:   "call TOOL [JSON|-] | call --from FORMAT [CALL|-]",
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
  capkit call list_dir --config capkit.toml --actor reviewer --json
  echo '{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"README.md"}}' | capkit call --from anthropic - --root .`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from != "" {
				return callFrom(cmd, env, &hf, from, strict, args)
			}
			if strict {
				return fault.New(fault.InvalidInput, "--strict goes with --from")
			}
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
			out := callResult{Text: res.Text, Structured: jsontext.Value(res.Structured)}
			for _, c := range res.Content {
				out.Content = append(out.Content, jsontext.Value(c))
			}
			return env.Print(out, res.Text)
		},
	}
	hf.add(cmd)
	cmd.Flags().StringVar(&from, "from", "", "the argument is a tool call in a provider's shape: anthropic, openai, openai-responses or gemini")
	cmd.Flags().BoolVar(&strict, "strict", false, "with --from: the tools were offered with capkit tools --strict (OpenAI's nulls for arguments left out are dropped)")
	return cmd
}

// callFrom runs one provider-shaped tool call and prints the provider's
// result.
func callFrom(cmd *cobra.Command, env *Env, hf *hostFlags, from string, strict bool, args []string) error {
	format, err := hostloop.ParseFormat(from)
	if err != nil {
		return err
	}
	if format == hostloop.MCP {
		return fault.New(fault.InvalidInput, "--from mcp: an MCP client calls tools through capkit serve")
	}
	if len(args) != 1 {
		return fault.New(fault.InvalidInput, "--from takes one argument, the call (or - for standard input), not a tool name")
	}
	h, actor, err := hf.open(env, nil)
	if err != nil {
		return err
	}
	defer h.Close()
	in := []byte(args[0])
	if args[0] == "-" {
		if in, err = readCall(env.Stdin, envelopeBound(h.Runtime)); err != nil {
			return err
		}
	}
	s, err := h.NewSession(actor, false)
	if err != nil {
		return err
	}
	l, err := hostloop.New(s, format, &hostloop.Options{Strict: strict})
	if err != nil {
		return err
	}
	r, err := l.Call(cmd.Context(), in)
	if err != nil {
		return err
	}
	for _, doc := range [][]byte{r.Result, r.Extra} {
		if doc == nil {
			continue
		}
		if _, err := env.Stdout.Write(append(doc, '\n')); err != nil {
			return fault.Wrap(fault.IO, err, "writing the result failed")
		}
	}
	if r.Err != nil {
		fmt.Fprintf(env.Stderr, "capkit: %s: %s\n", r.Err.Code, r.Err.Public())
		return &commandExit{code: r.Err.Code.ExitCode()}
	}
	return nil
}

// readCall reads a call of at most bound bytes.
func readCall(r io.Reader, bound int64) ([]byte, error) {
	in, err := io.ReadAll(io.LimitReader(r, bound+1))
	if err != nil {
		return nil, fault.Wrap(fault.IO, err, "reading the call from standard input failed")
	}
	if int64(len(in)) > bound {
		return nil, fault.LimitExceeded("the call on standard input (bytes)", bound, int64(len(in)))
	}
	return in, nil
}

// envelopeBound is how much of standard input a provider's call may take
// (limits.CallEnvelopeExpansion).
func envelopeBound(rt *kernel.Runtime) int64 {
	largest := int64(limits.DefaultMaxInputBytes)
	for _, e := range rt.Catalog().Entries() {
		if p, ok := rt.Policy(e.Name); ok {
			largest = max(largest, p.MaxInputBytes)
		}
	}
	return largest*limits.CallEnvelopeExpansion + limits.CallEnvelopeSlack
}
