package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"go.starlark.net/lib/math"
	startime "go.starlark.net/lib/time"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"

	starjson "go.starlark.net/lib/json"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// caller forwards one tool.call: in process straight to the session, in a
// worker over the pipe to the parent, which calls the session.
type caller func(ctx context.Context, name string, args json.RawMessage) (*kernel.Result, error)

// bounds are what one execution may use. They are resolved Options, and
// what a worker receives.
type bounds struct {
	Filename       string        `json:"filename"`
	MaxSteps       uint64        `json:"max_steps"`
	Timeout        time.Duration `json:"timeout"`
	MaxResultBytes int64         `json:"max_result_bytes"`
	MaxMemoryBytes int64         `json:"max_memory_bytes"`
	AllowTime      bool          `json:"allow_time"`
}

// outcome is a finished script.
type outcome struct {
	Value json.RawMessage `json:"value"`
	Steps uint64          `json:"steps"`
	Calls int             `json:"calls"`
}

// fileOptions are the dialect: while loops and top-level control flow are
// allowed (the step bound ends any loop); recursion is not (a deep Go stack
// is a fatal error, not a recoverable one); load is refused at run time.
var fileOptions = &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true}

// callFailure is the Starlark error of a failed tool.call: it carries the
// fault so that the script's failure keeps the tool's code.
type callFailure struct {
	tool string
	f    *fault.Error
}

func (e *callFailure) Error() string {
	return fmt.Sprintf("tool.call(%q) failed: %s: %s", e.tool, e.f.Code, e.f.Message)
}

// execute runs src to completion or to the first failure, within b. It is
// the same in process and in a worker.
func execute(ctx context.Context, src []byte, b bounds, call caller, print func(string)) (out outcome, err error) {
	if len(src) > limits.ScriptMaxSourceBytes {
		return out, fault.LimitExceeded("script source bytes", limits.ScriptMaxSourceBytes, int64(len(src)))
	}
	ctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()

	thread := &starlark.Thread{Name: b.Filename}
	// stop records why the script is being stopped (the first reason wins)
	// and cancels the thread; the interpreter notices at its next step.
	var stopped atomic.Pointer[fault.Error]
	stop := func(f *fault.Error) {
		stopped.CompareAndSwap(nil, f)
		thread.Cancel(f.Message)
	}
	defer context.AfterFunc(ctx, func() {
		if ctx.Err() == context.DeadlineExceeded {
			stop(fault.New(fault.Limit, "script: time limit of %v exceeded", b.Timeout))
		} else {
			stop(fault.New(fault.Unavailable, "script: canceled"))
		}
	})()

	thread.Load = func(*starlark.Thread, string) (starlark.StringDict, error) {
		return nil, errors.New("load is not available to scripts")
	}
	var printed int64
	thread.Print = func(_ *starlark.Thread, msg string) {
		printed += int64(len(msg)) + 1
		if printed > limits.ScriptMaxPrintBytes {
			stop(fault.LimitExceeded("script print bytes", limits.ScriptMaxPrintBytes, printed))
			return
		}
		if print != nil {
			print(msg)
		}
	}

	// The step hook fires every ScriptMemoryCheckSteps steps: it ends the
	// script at MaxSteps and samples the heap in between.
	base := heapBytes()
	thread.SetMaxExecutionSteps(min(b.MaxSteps, limits.ScriptMemoryCheckSteps))
	thread.OnMaxSteps = func(th *starlark.Thread) {
		if th.Steps >= b.MaxSteps {
			stop(fault.New(fault.Limit, "script: step limit of %d exceeded", b.MaxSteps))
			return
		}
		if grown := heapBytes() - base; grown > b.MaxMemoryBytes {
			stop(fault.New(fault.Limit, "script: memory limit of %d bytes exceeded", b.MaxMemoryBytes))
			return
		}
		th.SetMaxExecutionSteps(min(b.MaxSteps, th.Steps+limits.ScriptMemoryCheckSteps))
	}

	calls := 0
	toolCall := func(th *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var name string
		var arg starlark.Value = starlark.None
		var text bool
		if err := starlark.UnpackArgs(fn.Name(), args, kwargs, "name", &name, "arg?", &arg, "text?", &text); err != nil {
			return nil, err
		}
		encoded, err := encodeArg(arg)
		if err != nil {
			return nil, err
		}
		calls++
		res, err := call(ctx, name, encoded)
		if err != nil {
			fe := fault.As(err)
			if f := stopped.Load(); f != nil {
				fe = f // the call failed because the script is being stopped
			}
			return nil, &callFailure{tool: name, f: fe}
		}
		if text || len(res.Structured) == 0 {
			return starlark.String(res.Text), nil
		}
		return fromJSON(res.Structured)
	}
	predeclared := starlark.StringDict{
		"tool": &starlarkstruct.Module{Name: "tool", Members: starlark.StringDict{
			"call": starlark.NewBuiltin("tool.call", toolCall),
		}},
		"json": starjson.Module,
		"math": math.Module,
	}
	if b.AllowTime {
		predeclared["time"] = startime.Module
	}

	globals, err := starlark.ExecFileOptions(fileOptions, thread, b.Filename, src, predeclared)
	out.Steps, out.Calls = thread.ExecutionSteps(), calls
	if f := stopped.Load(); f != nil {
		return out, f
	}
	if err != nil {
		return out, scriptFault(err)
	}
	result, ok := globals["result"]
	if !ok {
		result = starlark.None
	}
	value, err := toJSON(result, b.MaxResultBytes, "script result")
	if err != nil {
		return out, err
	}
	out.Value = value
	return out, nil
}

// encodeArg turns tool.call's argument into the call's JSON: None is no
// arguments, a string stays a JSON string (callTool decides whether it
// fills the tool's one required string field), anything else is encoded.
func encodeArg(arg starlark.Value) (json.RawMessage, error) {
	switch a := arg.(type) {
	case starlark.NoneType:
		return json.RawMessage("{}"), nil
	case starlark.String:
		q, err := jsontext.AppendQuote(nil, string(a))
		if err != nil {
			return nil, fault.New(fault.InvalidInput, "tool.call argument: string is not valid UTF-8")
		}
		return q, nil
	}
	return toJSON(arg, limits.ScriptMaxCallArgBytes, "tool.call argument")
}

// scriptFault classifies an error from the interpreter: a failed tool call
// keeps its code; a syntax or resolution error and a runtime error of the
// script itself are invalid_input. Messages name the script position, not
// any host detail.
func scriptFault(err error) *fault.Error {
	var cf *callFailure
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		pos := ""
		for i := len(ee.CallStack) - 1; i >= 0; i-- {
			if p := ee.CallStack[i].Pos; p.IsValid() && p.Filename() != "<builtin>" {
				pos = p.String() + ": "
				break
			}
		}
		if errors.As(err, &cf) {
			return fault.New(cf.f.Code, "%s%s", pos, cf.Error()).RetryIn(cf.f.RetryAfter)
		}
		return fault.New(fault.InvalidInput, "script error: %s%s", pos, ee.Msg)
	}
	var se syntax.Error
	if errors.As(err, &se) {
		return fault.New(fault.InvalidInput, "script syntax error: %s", se.Error())
	}
	var rl resolve.ErrorList
	if errors.As(err, &rl) {
		return fault.New(fault.InvalidInput, "script error: %s", rl.Error())
	}
	return fault.New(fault.InvalidInput, "script error: %s", err.Error())
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

// heapBytes is the process's heap in use by objects, live or not yet
// swept.
func heapBytes() int64 {
	s := []metrics.Sample{heapSample[0]}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}
