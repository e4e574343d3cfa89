package script

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// Options bound a script. Zero fields mean the defaults of package limits
// (ScriptDefaultSteps, ScriptDefaultTimeout, ScriptDefaultResultBytes,
// ScriptDefaultMemoryBytes); none may exceed the matching hard limit.
type Options struct {
	// MaxSteps bounds Starlark execution steps.
	MaxSteps uint64
	// Timeout bounds wall-clock time, tool calls included.
	Timeout time.Duration
	// MaxResultBytes bounds the JSON encoding of the result global.
	MaxResultBytes int64
	// MaxMemoryBytes bounds heap growth: enforced by the worker process,
	// only sampled in process (see the package comment).
	MaxMemoryBytes int64
	// Filename names the script in messages (default "script.star").
	Filename string
	// AllowTime grants the time module: time.now() reads the host clock.
	AllowTime bool
	// Print receives each print() line; nil discards them. All prints
	// together are bounded by limits.ScriptMaxPrintBytes.
	Print func(msg string)
	// Worker runs the script in a child process; nil runs it in process.
	Worker *Worker
	// Provenance, when set, runs scripts with labels and decides their
	// effectful calls by its policies (see Provenance); its zero value is
	// the default policy. nil, the default, runs scripts without labels:
	// provenance is experimental and off unless the host turns it on.
	Provenance *Provenance
}

func (o *Options) resolve() (Options, bounds, error) {
	var r Options
	if o != nil {
		r = *o
	}
	b := bounds{
		Filename:       r.Filename,
		MaxSteps:       r.MaxSteps,
		Timeout:        r.Timeout,
		MaxResultBytes: r.MaxResultBytes,
		MaxMemoryBytes: r.MaxMemoryBytes,
		AllowTime:      r.AllowTime,
		Provenance:     r.Provenance != nil,
	}
	if b.Filename == "" {
		b.Filename = "script.star"
	}
	if b.MaxSteps == 0 {
		b.MaxSteps = limits.ScriptDefaultSteps
	}
	if b.Timeout == 0 {
		b.Timeout = limits.ScriptDefaultTimeout
	}
	if b.MaxResultBytes == 0 {
		b.MaxResultBytes = limits.ScriptDefaultResultBytes
	}
	if b.MaxMemoryBytes == 0 {
		b.MaxMemoryBytes = limits.ScriptDefaultMemoryBytes
	}
	switch {
	case b.MaxSteps > limits.ScriptHardSteps:
		return r, b, fault.New(fault.InvalidInput, "script max steps %d exceeds the hard limit of %d", b.MaxSteps, uint64(limits.ScriptHardSteps))
	case b.Timeout < 0 || b.Timeout > limits.ScriptHardTimeout:
		return r, b, fault.New(fault.InvalidInput, "script timeout %v is outside 0..%v", b.Timeout, limits.ScriptHardTimeout)
	case b.MaxResultBytes < 0 || b.MaxResultBytes > limits.ScriptHardResultBytes:
		return r, b, fault.New(fault.InvalidInput, "script max result bytes %d is outside 1..%d", b.MaxResultBytes, limits.ScriptHardResultBytes)
	case b.MaxMemoryBytes < 0 || b.MaxMemoryBytes > limits.ScriptHardMemoryBytes:
		return r, b, fault.New(fault.InvalidInput, "script max memory bytes %d is outside 1..%d", b.MaxMemoryBytes, int64(limits.ScriptHardMemoryBytes))
	}
	if r.Worker != nil && len(r.Worker.Command) == 0 {
		return r, b, fault.New(fault.InvalidInput, "script worker has no command")
	}
	return r, b, nil
}

// Result is a finished script.
type Result struct {
	// Value is the JSON encoding of the script's global "result" ("null"
	// when the script sets none).
	Value json.RawMessage
	// Steps is the number of Starlark steps executed.
	Steps uint64
	// Calls is the number of tool.call invocations.
	Calls int
	// Sources name the untrusted sources the result depends on (none
	// without provenance).
	Sources []string
}

// Run executes src in sess. It returns the result or a *fault.Error: the
// code of the failed tool call, limit for a bound, invalid_input for a
// syntax or runtime error of the script, unavailable when ctx is canceled.
// opts may be nil.
func Run(ctx context.Context, sess *kernel.Session, src []byte, opts *Options) (Result, error) {
	if sess == nil {
		return Result{}, fault.New(fault.InvalidInput, "script: nil session")
	}
	o, b, err := opts.resolve()
	if err != nil {
		return Result{}, err
	}
	if len(src) > limits.ScriptMaxSourceBytes {
		return Result{}, fault.LimitExceeded("script source bytes", limits.ScriptMaxSourceBytes, int64(len(src)))
	}
	var out outcome
	m := newMonitor(sess, o.Provenance)
	if o.Worker != nil {
		out, err = runWorker(ctx, m, src, b, o)
	} else {
		out, err = runInProcess(ctx, m, src, b, o.Print)
	}
	if err != nil {
		return Result{Steps: out.Steps, Calls: out.Calls}, err
	}
	return Result(out), nil
}

// runInProcess runs the interpreter on its own goroutine so that a
// built-in that ignores cancellation cannot hold the caller past the
// deadline: after a grace period it is abandoned.
func runInProcess(ctx context.Context, m *monitor, src []byte, b bounds, print func(string)) (outcome, error) {
	type done struct {
		out outcome
		err error
	}
	ch := make(chan done, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- done{err: fault.Wrap(fault.Internal, fmt.Errorf("panic: %v\n%s", p, debug.Stack()), "script interpreter failed")}
			}
		}()
		out, err := execute(ctx, src, b, m, print)
		ch <- done{out, err}
	}()
	timer := time.NewTimer(b.Timeout + limits.ScriptWorkerGrace)
	defer timer.Stop()
	select {
	case d := <-ch:
		return d.out, d.err
	case <-timer.C:
		return outcome{}, fault.New(fault.Limit, "script: time limit of %v exceeded (a built-in did not stop; abandoned)", b.Timeout)
	}
}

// soleStringField returns the name of the only required property when it
// is a string.
func soleStringField(required []string, props map[string]*jsonschema.Schema) (string, bool) {
	if len(required) != 1 {
		return "", false
	}
	p, ok := props[required[0]]
	if !ok || p == nil || p.Type != "string" {
		return "", false
	}
	return required[0], true
}
