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

// RegisterTool registers the script runner as the tool policy.Name
// (conventionally ToolName) with effect capability.RunScript. The tool
// takes Starlark source and runs it in the calling session under opts (nil
// allowed), so every tool.call is checked, budgeted and audited as if the
// model made it; the script as a whole is bounded by opts and by the
// policy. Its text result is the JSON of the script's result global, at
// most the smaller of opts.MaxResultBytes and the policy's output bound.
// A zero policy.MaxInputBytes means limits.ScriptMaxSourceBytes (plus the
// JSON framing); a zero policy.Timeout means the script timeout plus
// limits.ScriptWorkerGrace. Scripts cannot call this tool themselves.
func RegisterTool(b *kernel.Builder, policy kernel.Policy, meta kernel.Meta, opts *Options) error {
	o, bd, err := opts.resolve()
	if err != nil {
		return fmt.Errorf("script: tool %q: %w", policy.Name, err)
	}
	switch meta.Effect {
	case "":
		meta.Effect = capability.RunScript
	case capability.RunScript:
	default:
		return fmt.Errorf("script: tool %q: effect must be %s, not %s", policy.Name, capability.RunScript, meta.Effect)
	}
	if policy.MaxInputBytes == 0 {
		policy.MaxInputBytes = 2*limits.ScriptMaxSourceBytes + 64 // JSON escaping can double the source
	}
	if policy.Timeout == 0 {
		policy.Timeout = bd.Timeout + limits.ScriptWorkerGrace
	}
	if meta.Summary == "" {
		meta.Summary = "Run a Starlark workflow that calls your other tools."
	}
	if meta.Description == "" {
		meta.Description = description(bd)
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
		"Limits: %d steps, %v, result %d bytes, memory %d bytes; each tool call counts against that tool's own budget. "+
		"Example: {\"source\": \"notes = tool.call(\\\"notes\\\", \\\"release.notes\\\")\\nresult = notes.splitlines()[0]\"}",
		b.MaxSteps, b.Timeout, b.MaxResultBytes, b.MaxMemoryBytes)
}
