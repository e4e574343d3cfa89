package script

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// Worker is how to start a script worker: a child process that calls
// ServeWorker. The child gets no capability: every tool.call is a message
// to the parent, which makes the call in the session. It holds the script
// to MaxMemoryBytes of address space (Linux; elsewhere only the sampled
// bound applies) and is killed if it outlives its deadline.
type Worker struct {
	// Command is the program and its arguments, e.g. the host's own
	// executable and a hidden subcommand: capkit uses
	// [os.Executable(), "script", "worker"].
	Command []string
	// Env is the child's whole environment; nil means an empty one, so
	// nothing of the host's environment reaches the child.
	Env []string
}

// The worker protocol: a stream of JSON values. The parent sends a
// workerStart on the child's fd 3, then one workerReply per workerMsg call
// it reads from the child's fd 4.
type workerStart struct {
	Source []byte `json:"source"`
	Bounds bounds `json:"bounds"`
	Print  bool   `json:"print"`
}

type wireFault struct {
	Code       fault.Code    `json:"code"`
	Message    string        `json:"message"`
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	Detail     string        `json:"detail,omitempty"`
}

func toWire(err error) *wireFault {
	fe := fault.As(err)
	return &wireFault{Code: fe.Code, Message: fe.Message, RetryAfter: fe.RetryAfter, Detail: fe.Detail}
}

func (w *wireFault) fault() *fault.Error {
	return fault.New(w.Code, "%s", w.Message).RetryIn(w.RetryAfter).WithDetail(w.Detail)
}

type workerMsg struct {
	Call       *callRequest       `json:"call,omitempty"`
	Declassify *declassifyRequest `json:"declassify,omitempty"`
	Print      *string            `json:"print,omitempty"`
	Done       *outcome           `json:"done,omitempty"`
	Fail       *wireFault         `json:"fail,omitempty"`
}

// workerReply answers a call (its result and source) or a declassify
// (nothing but an error, if refused).
type workerReply struct {
	Text       string          `json:"text"`
	Structured json.RawMessage `json:"structured,omitempty"`
	Error      *wireFault      `json:"error,omitempty"`
	Source     int32           `json:"source"`
	NewSources []sourceInfo    `json:"new_sources,omitempty"`
}

// pipeHost is the worker's host side: the parent, over the pipes.
type pipeHost struct {
	enc *json.Encoder
	dec *json.Decoder
}

func (p *pipeHost) ask(m workerMsg) (*workerReply, error) {
	if err := p.enc.Encode(m); err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "script worker lost its parent")
	}
	var r workerReply
	if err := p.dec.Decode(&r); err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "script worker lost its parent")
	}
	if r.Error != nil {
		return nil, r.Error.fault()
	}
	return &r, nil
}

func (p *pipeHost) call(_ context.Context, req *callRequest) (*callReply, error) {
	r, err := p.ask(workerMsg{Call: req})
	if err != nil {
		return nil, err
	}
	return &callReply{Result: &kernel.Result{Text: r.Text, Structured: r.Structured}, Source: r.Source, NewSources: r.NewSources}, nil
}

func (p *pipeHost) declassify(_ context.Context, req *declassifyRequest) error {
	_, err := p.ask(workerMsg{Declassify: req})
	return err
}

// ServeWorker is the child side: it reads one script from fd 3, bounds its
// own memory, runs the script, forwarding each tool.call to the parent over
// fd 4, and reports the outcome there. Call it from a hidden subcommand or
// an early check in main, and exit when it returns.
func ServeWorker(ctx context.Context) error {
	in, out := os.NewFile(3, "script-in"), os.NewFile(4, "script-out")
	if in == nil || out == nil {
		return errors.New("script worker: fds 3 and 4 are not open; start it through script.Run with a Worker")
	}
	defer in.Close()
	defer out.Close()
	dec, enc := json.NewDecoder(in), json.NewEncoder(out)
	var start workerStart
	if err := dec.Decode(&start); err != nil {
		return fmt.Errorf("script worker: reading the script: %w", err)
	}
	if err := limitMemory(start.Bounds.MaxMemoryBytes); err != nil {
		return enc.Encode(workerMsg{Fail: toWire(fault.Wrap(fault.Internal, err, "script worker could not bound its memory"))})
	}
	var print func(string)
	if start.Print {
		print = func(msg string) { enc.Encode(workerMsg{Print: &msg}) }
	}
	h := &pipeHost{enc: enc, dec: dec}
	res, err := func() (res outcome, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fault.Wrap(fault.Internal, fmt.Errorf("panic: %v", p), "script interpreter failed")
			}
		}()
		return execute(ctx, start.Source, start.Bounds, h, print)
	}()
	if err != nil {
		return enc.Encode(workerMsg{Fail: toWire(err), Done: &outcome{Steps: res.Steps, Calls: res.Calls}})
	}
	return enc.Encode(workerMsg{Done: &res})
}

// runWorker is the parent side.
func runWorker(ctx context.Context, m *monitor, src []byte, b bounds, o Options) (outcome, error) {
	w, err := startWorker(o)
	if err != nil {
		return outcome{}, err
	}
	defer w.toChild.Close()
	defer w.fromChild.Close()
	// The child stops itself at the deadline; it is killed after a grace
	// period, or at once when ctx is canceled.
	deadline, cancel := context.WithTimeout(ctx, b.Timeout+limits.ScriptWorkerGrace)
	defer cancel()
	stopKill := context.AfterFunc(deadline, func() { w.cmd.Process.Kill() })
	defer stopKill()
	defer w.reap()

	enc := json.NewEncoder(w.toChild)
	if err := enc.Encode(workerStart{Source: src, Bounds: b, Print: o.Print != nil}); err != nil {
		return outcome{}, fault.Wrap(fault.Unavailable, err, "script worker could not start")
	}
	return w.serve(ctx, deadline, m, b, o, enc)
}

// worker is one running worker process and its two pipes.
type worker struct {
	cmd                *exec.Cmd
	toChild, fromChild *os.File
	diag               *boundedBuffer
	waited             bool
}

// startWorker starts o.Worker's command with an empty environment (unless
// one is given), the root as its directory, and the two pipes as its
// descriptors 3 and 4.
func startWorker(o Options) (*worker, error) {
	childIn, toChild, err := os.Pipe()
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "script worker could not start")
	}
	fromChild, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		toChild.Close()
		return nil, fault.Wrap(fault.Unavailable, err, "script worker could not start")
	}
	cmd := exec.Command(o.Worker.Command[0], o.Worker.Command[1:]...)
	cmd.Env = o.Worker.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Dir = string(os.PathSeparator)
	cmd.Stdin = nil
	diag := &boundedBuffer{max: limits.ScriptWorkerStderrBytes}
	cmd.Stdout, cmd.Stderr = diag, diag
	cmd.ExtraFiles = []*os.File{childIn, childOut}
	cmd.SysProcAttr = workerSysProcAttr()
	err = cmd.Start()
	childIn.Close()
	childOut.Close()
	if err != nil {
		toChild.Close()
		fromChild.Close()
		return nil, fault.Wrap(fault.Unavailable, err, "script worker could not start")
	}
	return &worker{cmd: cmd, toChild: toChild, fromChild: fromChild, diag: diag}, nil
}

// reap kills and waits for the worker unless it has been waited for.
func (w *worker) reap() {
	if !w.waited {
		w.cmd.Process.Kill()
		w.cmd.Wait()
	}
}

// died waits for the worker after its pipe failed and says why it ended.
func (w *worker) died(ctx, deadline context.Context, b bounds) error {
	w.waited = true
	werr := w.cmd.Wait()
	return workerDied(ctx, deadline, b, werr, w.diag.String())
}

// serve answers the worker's tool calls and prints until it reports its
// outcome.
func (w *worker) serve(ctx, deadline context.Context, mon *monitor, b bounds, o Options, enc *json.Encoder) (outcome, error) {
	dec := json.NewDecoder(w.fromChild)
	callCtx, cancelCalls := context.WithTimeout(ctx, b.Timeout)
	defer cancelCalls()
	for {
		var m workerMsg
		if err := dec.Decode(&m); err != nil {
			return outcome{}, w.died(ctx, deadline, b)
		}
		switch {
		case m.Call != nil || m.Declassify != nil:
			r := workerReply{Source: -1}
			if m.Call != nil {
				if reply, err := mon.call(callCtx, m.Call); err != nil {
					r.Error = toWire(err)
				} else {
					r.Text, r.Structured = reply.Result.Text, reply.Result.Structured
					r.Source, r.NewSources = reply.Source, reply.NewSources
				}
			} else if err := mon.declassify(callCtx, m.Declassify); err != nil {
				r.Error = toWire(err)
			}
			if err := enc.Encode(r); err != nil {
				return outcome{}, w.died(ctx, deadline, b)
			}
		case m.Print != nil:
			if o.Print != nil {
				o.Print(*m.Print)
			}
		case m.Fail != nil:
			var out outcome
			if m.Done != nil {
				out = *m.Done
			}
			return out, m.Fail.fault()
		case m.Done != nil:
			return *m.Done, nil
		}
	}
}

// workerDied explains a worker that stopped without reporting: killed at
// the deadline, canceled, out of memory, or a failure kept for the log.
func workerDied(ctx, deadline context.Context, b bounds, werr error, diag string) error {
	switch {
	case ctx.Err() != nil:
		return fault.Wrap(fault.Unavailable, ctx.Err(), "script: canceled")
	case deadline.Err() != nil:
		return fault.New(fault.Limit, "script: time limit of %v exceeded", b.Timeout)
	case outOfMemory(diag):
		return fault.New(fault.Limit, "script: memory limit of %d bytes exceeded", b.MaxMemoryBytes)
	}
	return fault.Wrap(fault.Internal, fmt.Errorf("worker exited (%v): %s", werr, diag), "script worker failed")
}

// outOfMemory recognizes the Go runtime's fatal errors when the address
// space limit refuses a mapping (the last two are the race detector's forms).
func outOfMemory(diag string) bool {
	for _, m := range []string{"fatal error: out of memory", "cannot allocate memory", "failed to create new OS thread", "too many address space collisions", "ThreadSanitizer failed to allocate"} {
		if strings.Contains(diag, m) {
			return true
		}
	}
	return false
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var _ io.Writer = (*boundedBuffer)(nil)
