package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/serve/hostloop"
)

// toolState says how a session meets a tool.
const (
	stateHot        = "hot"         // listed from the start
	stateDeferred   = "deferred"    // listed once tool_search returns it
	stateNotGranted = "not_granted" // with --all: registered, not granted to the actor
)

// toolSpec is one tool as `capkit tools --json` prints it.
type toolSpec struct {
	Name         string         `json:"name"`
	State        string         `json:"state"`
	Effect       string         `json:"effect"`
	Summary      string         `json:"summary,omitempty"`
	Description  string         `json:"description"`
	InputSchema  jsontext.Value `json:"input_schema"`
	OutputSchema jsontext.Value `json:"output_schema,omitempty"`
	Annotations  toolHints      `json:"annotations"`
	Policy       toolPolicy     `json:"policy"`
}

type toolHints struct {
	ReadOnly    bool `json:"read_only"`
	Destructive bool `json:"destructive"`
	Idempotent  bool `json:"idempotent"`
	OpenWorld   bool `json:"open_world"`
}

type toolPolicy struct {
	MaxCalls       int    `json:"max_calls"`
	MaxInputBytes  int64  `json:"max_input_bytes"`
	MaxOutputBytes int64  `json:"max_output_bytes"`
	Timeout        string `json:"timeout"`
}

func newToolsCmd(env *Env) *cobra.Command {
	hf := hostFlags{discover: true}
	var all, strict, allGranted bool
	var format string
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools an actor's sessions see",
		Long: `tools lists the tools a session of the actor may call, from the same
configuration serve uses: "hot" tools are listed to the model from the
start, "deferred" ones once tool_search finds them. --all adds the
registered tools the actor is not granted ("not_granted"). With --json, each
tool's full spec: description, input and output schemas, annotations and
effective policy. Given neither --config nor --root/--read-only, the
configuration is ./capkit.toml when there is one (standard error says so).

--format mcp|anthropic|openai|openai-responses|gemini gives the tools a
model is offered (the hot ones, or with --all-granted every granted tool)
in that provider's tool-definition shape, for a host that calls the
model's API itself: with --json {"format", "tools": [definitions...],
"specs": [{name, strict, not_strict, changes}]}. The names, descriptions and
order are the same in every format. --strict asks the providers with a
strict mode (anthropic, openai, openai-responses) to enforce each tool's
schema, transformed into their strict subset; a tool whose schema cannot
be expressed there is sent non-strict, and not_strict says why. The kernel
validates every call against the tool's own schema either way.

Examples:
  capkit tools --root .
  capkit tools --config capkit.toml --actor reviewer --all
  capkit tools --root . --json
  capkit tools --root . --format openai --strict --json | jq .tools`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, actor, err := hf.open(env, nil)
			if err != nil {
				return err
			}
			defer h.Close()
			s, err := h.NewSession(actor, true)
			if err != nil {
				return err
			}
			if format != "" {
				if all {
					return fault.New(fault.InvalidInput, "--all lists tools the actor is not granted, which no model is offered: use --all-granted with --format")
				}
				return printFormat(env, s, format, &hostloop.Options{Strict: strict, AllGranted: allGranted})
			}
			if strict || allGranted {
				return fault.New(fault.InvalidInput, "--strict and --all-granted go with --format")
			}
			// As a client's first tools/list: other servers' tools are
			// offered once they have started, within the wait.
			ctx, cancel := context.WithTimeout(cmd.Context(), limits.UpstreamListWait)
			offered := map[string]bool{}
			for _, e := range s.SpecsWithin(ctx) {
				offered[e.Name] = true
			}
			cancel()
			caps := capability.Set(s.Capabilities())
			var specs []toolSpec
			var text strings.Builder
			tw := tabwriter.NewWriter(&text, 0, 4, 2, ' ', 0)
			for _, e := range h.Runtime.Catalog().Entries() {
				state := stateNotGranted
				switch {
				case offered[e.Name]:
					state = stateHot
				case caps.Grants(e.Effect):
					state = stateDeferred
				case !all:
					continue
				}
				if env.JSON {
					spec, err := specOf(h.Runtime.Policy, e, state)
					if err != nil {
						return err
					}
					specs = append(specs, spec)
					continue
				}
				// The text shows no schema: checked, not encoded.
				if _, _, err := e.Schemas(); err != nil {
					return fault.Wrap(fault.Internal, err, "tool %s cannot be listed", e.Name)
				}
				summary := e.Summary
				if summary == "" {
					summary, _, _ = strings.Cut(e.Description, "\n")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, state, summary)
			}
			tw.Flush()
			if specs == nil {
				specs = []toolSpec{}
			}
			return env.Print(specs, text.String())
		},
	}
	hf.add(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "also list the registered tools the actor is not granted")
	cmd.Flags().StringVar(&format, "format", "", "the tools in a provider's shape: mcp, anthropic, openai, openai-responses or gemini")
	cmd.Flags().BoolVar(&strict, "strict", false, "with --format: ask the provider to enforce each tool's schema (strict mode)")
	cmd.Flags().BoolVar(&allGranted, "all-granted", false, "with --format: every tool the actor is granted, not only those offered from the start")
	return cmd
}

// formatted is what `capkit tools --format F --json` prints.
type formatted struct {
	Format string           `json:"format"`
	Tools  []jsontext.Value `json:"tools"`
	Specs  []formatSpec     `json:"specs"`
}

type formatSpec struct {
	Name      string            `json:"name"`
	Strict    bool              `json:"strict"`
	NotStrict string            `json:"not_strict,omitempty"`
	Changes   []hostloop.Change `json:"changes,omitempty"`
}

// printFormat prints the session's tools in a provider's shape.
func printFormat(env *Env, s *kernel.Session, name string, opts *hostloop.Options) error {
	f, err := hostloop.ParseFormat(name)
	if err != nil {
		return err
	}
	l, err := hostloop.New(s, f, opts)
	if err != nil {
		return err
	}
	specs, err := l.Specs()
	if err != nil {
		return err
	}
	out := formatted{Format: string(f), Tools: []jsontext.Value{}, Specs: []formatSpec{}}
	var text strings.Builder
	tw := tabwriter.NewWriter(&text, 0, 4, 2, ' ', 0)
	for _, sp := range specs {
		out.Tools = append(out.Tools, jsontext.Value(sp.Definition))
		out.Specs = append(out.Specs, formatSpec{Name: sp.Name, Strict: sp.Strict, NotStrict: sp.NotStrict, Changes: sp.Changes})
		mode := "-"
		switch {
		case sp.Strict:
			mode = "strict"
		case sp.NotStrict != "":
			mode = "not strict: " + sp.NotStrict
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", sp.Name, mode, changesText(sp.Changes))
	}
	tw.Flush()
	return env.Print(out, text.String())
}

// changesText summarizes a spec's changes for the text listing.
func changesText(cs []hostloop.Change) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s%s %s", c.Pointer, "/"+c.Keyword, c.What))
	}
	return strings.Join(parts, "; ")
}

// specOf is e's spec; it fails (internal) when e's schemas do not resolve.
func specOf(policy func(string) (kernel.Policy, bool), e *catalog.Entry, state string) (toolSpec, error) {
	in, out, err := e.SchemaJSON()
	if err != nil {
		return toolSpec{}, fault.Wrap(fault.Internal, err, "tool %s cannot be listed", e.Name)
	}
	h := e.Hints()
	p, _ := policy(e.Name)
	return toolSpec{
		Name: e.Name, State: state, Effect: string(e.Effect),
		Summary: e.Summary, Description: e.Description,
		InputSchema:  jsontext.Value(in),
		OutputSchema: jsontext.Value(out),
		Annotations:  toolHints{ReadOnly: h.ReadOnly, Destructive: h.Destructive, Idempotent: h.Idempotent, OpenWorld: h.OpenWorld},
		Policy: toolPolicy{MaxCalls: p.MaxCalls, MaxInputBytes: p.MaxInputBytes,
			MaxOutputBytes: p.MaxOutputBytes, Timeout: p.Timeout.String()},
	}, nil
}
