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

// bounds are what one execution may use. They are resolved Options, and
// what a worker receives.
type bounds struct {
	Filename       string        `json:"filename"`
	MaxSteps       uint64        `json:"max_steps"`
	Timeout        time.Duration `json:"timeout"`
	MaxResultBytes int64         `json:"max_result_bytes"`
	MaxMemoryBytes int64         `json:"max_memory_bytes"`
	AllowTime      bool          `json:"allow_time"`
	// Provenance runs the script rewritten to label every value.
	Provenance bool `json:"provenance"`
}

// outcome is a finished script.
type outcome struct {
	Value json.RawMessage `json:"value"`
	Steps uint64          `json:"steps"`
	Calls int             `json:"calls"`
	// Sources name the untrusted sources the result depends on.
	Sources []string `json:"sources,omitempty"`
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

// execution is one run of a script: its thread, its bounds, and why it is
// being stopped.
type execution struct {
	ctx     context.Context
	b       bounds
	host    host
	print   func(string)
	thread  *starlark.Thread
	stopped atomic.Pointer[fault.Error]
	printed int64
	base    int64 // heap bytes at the start
	calls   int
	tr      *tracker // nil without provenance
}

// execute runs src to completion or to the first failure, within b. It is
// the same in process and in a worker.
func execute(ctx context.Context, src []byte, b bounds, h host, print func(string)) (out outcome, err error) {
	if len(src) > limits.ScriptMaxSourceBytes {
		return out, fault.LimitExceeded("script source bytes", limits.ScriptMaxSourceBytes, int64(len(src)))
	}
	ctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	e := &execution{ctx: ctx, b: b, host: h, print: print, thread: &starlark.Thread{Name: b.Filename}}
	defer context.AfterFunc(ctx, e.expire)()
	e.thread.Load = func(*starlark.Thread, string) (starlark.StringDict, error) {
		return nil, errors.New("load is not available to scripts")
	}
	e.thread.Print = e.onPrint
	// The step hook fires every ScriptMemoryCheckSteps steps: it ends the
	// script at MaxSteps and samples the heap in between.
	e.base = heapBytes()
	e.thread.SetMaxExecutionSteps(min(b.MaxSteps, limits.ScriptMemoryCheckSteps))
	e.thread.OnMaxSteps = e.onSteps

	var globals starlark.StringDict
	if b.Provenance {
		globals, err = e.runLabelled(src)
	} else {
		globals, err = starlark.ExecFileOptions(fileOptions, e.thread, b.Filename, src, e.predeclared())
	}
	out.Steps, out.Calls = e.thread.ExecutionSteps(), e.calls
	if f := e.stopped.Load(); f != nil {
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
	if e.tr != nil {
		l, err := e.tr.deep(result)
		if err != nil {
			return out, err
		}
		out.Sources = e.tr.untrustedNames(l)
	}
	return out, nil
}

// runLabelled runs src rewritten so that every value carries its label
// (see the package comment): the original is parsed and resolved as the
// interpreter would, so its errors are the interpreter's, then rewritten
// and compiled.
func (e *execution) runLabelled(src []byte) (starlark.StringDict, error) {
	f, err := fileOptions.Parse(e.b.Filename, src, 0)
	if err != nil {
		return nil, err
	}
	e.tr = newTracker(nil, nil)
	e.tr.ctx = e.ctx
	predeclared := e.predeclared()
	if err := resolve.File(f, predeclared.Has, starlark.Universe.Has); err != nil {
		return nil, err
	}
	rf, regions, impure, err := rewrite(e.ctx, f, limits.ScriptProvenanceAnalysisSteps)
	if _, ok := err.(*fault.Error); ok {
		return nil, err
	}
	if err != nil {
		return nil, fault.New(fault.InvalidInput, "script error: %s", err)
	}
	e.tr.regions, e.tr.impure = regions, impure
	bindHelpers(rf, e.tr.helpers(), predeclared)
	prog, err := starlark.FileProgram(rf, predeclared.Has)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "script: the labelled program does not compile")
	}
	g, err := prog.Init(e.thread, predeclared)
	g.Freeze()
	return g, err
}

// bindHelpers makes the helpers globals of f, bound by its first
// statement from one predeclared tuple: the interpreter reads a global by
// its index, a predeclared name by a map lookup at every reference, and
// the labelled program names a helper at nearly every operation.
func bindHelpers(f *syntax.File, helpers, predeclared starlark.StringDict) {
	var pos syntax.Position
	if len(f.Stmts) > 0 {
		pos = syntax.Start(f.Stmts[0])
	}
	names := helpers.Keys()
	lhs := &syntax.TupleExpr{}
	values := make(starlark.Tuple, len(names))
	for i, name := range names {
		lhs.List = append(lhs.List, ident(name, pos))
		values[i] = helpers[name]
	}
	predeclared[hHelpers] = values
	bind := &syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: lhs, RHS: ident(hHelpers, pos)}
	f.Stmts = append([]syntax.Stmt{bind}, f.Stmts...)
}

// stop records why the script is being stopped (the first reason wins)
// and cancels the thread; the interpreter notices at its next step.
func (e *execution) stop(f *fault.Error) {
	e.stopped.CompareAndSwap(nil, f)
	e.thread.Cancel(f.Message)
}

// expire stops the script when its context ends.
func (e *execution) expire() {
	if e.ctx.Err() == context.DeadlineExceeded {
		e.stop(fault.New(fault.Limit, "script: time limit of %v exceeded", e.b.Timeout))
	} else {
		e.stop(fault.New(fault.Unavailable, "script: canceled"))
	}
}

// onPrint passes a printed line on within the print bound.
func (e *execution) onPrint(_ *starlark.Thread, msg string) {
	e.printed += int64(len(msg)) + 1
	if e.printed > limits.ScriptMaxPrintBytes {
		e.stop(fault.LimitExceeded("script print bytes", limits.ScriptMaxPrintBytes, e.printed))
		return
	}
	if e.print != nil {
		e.print(msg)
	}
}

// onSteps ends the script at its step or memory bound, or sets the next
// check.
func (e *execution) onSteps(th *starlark.Thread) {
	if th.Steps >= e.b.MaxSteps {
		e.stop(fault.New(fault.Limit, "script: step limit of %d exceeded", e.b.MaxSteps))
		return
	}
	if grown := heapBytes() - e.base; grown > e.b.MaxMemoryBytes {
		e.stop(fault.New(fault.Limit, "script: memory limit of %d bytes exceeded", e.b.MaxMemoryBytes))
		return
	}
	th.SetMaxExecutionSteps(min(e.b.MaxSteps, th.Steps+limits.ScriptMemoryCheckSteps))
}

// predeclared is what a script sees: tool.call, prov, json, math and,
// when allowed, time. With labels, tool.call and prov's functions are
// label-aware built-ins of the tracker.
func (e *execution) predeclared() starlark.StringDict {
	call := starlark.NewBuiltin("tool.call", e.toolCall)
	prov := e.provModule()
	d := starlark.StringDict{
		"tool": &starlarkstruct.Module{Name: "tool", Members: starlark.StringDict{"call": call}},
		"prov": prov,
		"json": starjson.Module,
		"math": math.Module,
	}
	if e.b.AllowTime {
		d["time"] = startime.Module
	}
	if e.tr != nil {
		e.tr.aware = e.tr.universalAware()
		e.tr.aware[call] = e.toolCallLabelled
		for name, fn := range e.provAware() {
			e.tr.aware[prov.Members[name].(*starlark.Builtin)] = fn
		}
	}
	return d
}

// toolCall is tool.call(name, arg=None, text=False).
func (e *execution) toolCall(th *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
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
	reply, err := e.callHost(&callRequest{Name: name, Args: encoded})
	if err != nil {
		return nil, err
	}
	return resultValue(reply.Result, text)
}

// callHost makes one call through the host side.
func (e *execution) callHost(req *callRequest) (*callReply, error) {
	e.calls++
	reply, err := e.host.call(e.ctx, req)
	if err != nil {
		fe := fault.As(err)
		if f := e.stopped.Load(); f != nil {
			fe = f // the call failed because the script is being stopped
		}
		return nil, &callFailure{tool: req.Name, f: fe}
	}
	return reply, nil
}

// resultValue is a call's result as the script sees it: its text, or its
// structured result decoded.
func resultValue(res *kernel.Result, text bool) (starlark.Value, error) {
	if text || len(res.Structured) == 0 {
		return starlark.String(res.Text), nil
	}
	return fromJSON(res.Structured)
}

// encodeArg turns tool.call's argument into the call's JSON: None is no
// arguments, a string stays a JSON string (callTool decides whether it
// fills the tool's one required string field), anything else is encoded.
func encodeArg(arg starlark.Value) (json.RawMessage, error) {
	if t, ok := arg.(*tainted); ok {
		arg = t.v
	}
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
	if fe, ok := err.(*fault.Error); ok {
		return fe // the host's own, before the script ran (the provenance analysis)
	}
	if errors.As(err, &ee) {
		pos := ""
		for i := len(ee.CallStack) - 1; i >= 0; i-- {
			if p := ee.CallStack[i].Pos; p.IsValid() && p.Filename() != "<builtin>" {
				pos = p.String() + ": "
				break
			}
		}
		if errors.As(err, &cf) {
			return cf.f.Restated("%s%s", pos, cf.Error())
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
