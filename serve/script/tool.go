package script

import (
	"context"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// ToolName is the conventional name of the script tool.
const ToolName = "run_script"

type runArgs struct {
	Source string `json:"source" jsonschema:"Starlark source; set the global result to what you want back, e.g. result = tool.call(\"read_file\", \"notes.txt\")"`
}

// ToolOptions configure RegisterTools. A nil *ToolOptions means the zero
// value.
type ToolOptions struct {
	// Run bounds every script the tool runs (see Options).
	Run Options
}

// RegisterTools registers the script runner as the tool ToolName with
// effect capability.RunScript. The tool takes Starlark source and runs it
// in the calling session under opts.Run, so every tool.call is checked,
// budgeted and audited as if the model made it; the script as a whole is
// bounded by opts.Run and by the tool's policy. Its text result is the
// JSON of the script's result global, at most the smaller of
// Run.MaxResultBytes and the policy's output bound. The policy's input
// bound is limits.ScriptMaxSourceBytes (plus the JSON framing) and its
// timeout the script timeout plus limits.ScriptWorkerGrace, unless the
// host overrides them (kernel.Options.PolicyOverride). Scripts cannot call
// this tool themselves.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	var run *Options
	if opts != nil {
		run = &opts.Run
	}
	o, bd, err := run.resolve()
	if err != nil {
		return fmt.Errorf("script: tool %q: %w", ToolName, err)
	}
	policy := kernel.Policy{
		Name:          ToolName,
		MaxInputBytes: 2*limits.ScriptMaxSourceBytes + 64, // JSON escaping can double the source
		Timeout:       bd.Timeout + limits.ScriptWorkerGrace,
	}
	meta := kernel.Meta{
		Effect:      capability.RunScript,
		Title:       "Run script",
		Summary:     "Run a Starlark workflow that calls your other tools.",
		Description: description(bd),
	}
	in, err := jsonschema.For[runArgs](nil)
	if err != nil {
		return fmt.Errorf("script: tool %q: input schema: %w", policy.Name, err)
	}
	return b.Register(policy, meta, in, nil, func(ctx context.Context, call *kernel.Call) (*kernel.Result, error) {
		var args runArgs
		if err := jsonv2.Unmarshal(call.Args, &args, jsonv2.RejectUnknownMembers(true)); err != nil {
			return nil, fault.New(fault.InvalidInput, "tool %s: %s", call.Tool.Name, err.Error())
		}
		run := o
		run.MaxResultBytes = min(bd.MaxResultBytes, call.MaxOutputBytes)
		run.Print = nil
		res, err := Run(ctx, call.Session, []byte(args.Source), &run)
		if err != nil {
			return nil, err
		}
		return &kernel.Result{Text: string(res.Value)}, nil
	})
}

// description is what the script tool tells the model by default.
func description(b bounds) string {
	return fmt.Sprintf("Runs a Starlark (Python-like) script that calls your other tools with tool.call(name, arg) and returns "+
		"the JSON of its global `result`. arg is a dict of the tool's arguments, or a string for a tool with one required "+
		"string argument; the value returned is the tool's structured result (or its text; pass text=True to always get "+
		"text). A failed call ends the script with that call's error; there is no try/except. Modules: json, math. "+
		"Limits: %d steps, %v, result %d bytes and at most this tool's output bound (%s unless the host sets another), memory %d bytes; "+
		"a result over either fails with limit, never cut: return less (a count, a slice). Each tool call counts against that tool's own budget. "+
		"Example: {\"source\": \"notes = tool.call(\\\"notes\\\", \\\"release.notes\\\")\\nresult = notes.splitlines()[0]\"}",
		b.MaxSteps, b.Timeout, b.MaxResultBytes, limits.Bytes(limits.DefaultMaxOutputBytes), b.MaxMemoryBytes)
}
