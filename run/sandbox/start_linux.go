package sandbox

import (
	"context"

	"github.com/capkit/capkit/fault"
)

// Start starts spec's command in a container and returns once it runs,
// with its standard input and output for the caller (see Process). It
// fails as Run fails when the command cannot be started; opts.Stdin must
// be nil (the caller writes to Process.Stdin), and opts.Warm is not used
// (a helper started ahead serves one call, not a life). ctx bounds the
// command's whole life: when it ends the command is killed.
func Start(ctx context.Context, spec *Spec, opts *Options) (*Process, error) {
	if opts != nil && opts.Stdin != nil {
		return nil, fault.New(fault.Internal, "sandbox: Start takes no Options.Stdin; write to Process.Stdin")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Warm, o.AfterReply = nil, nil
	ctx, cancel := context.WithCancel(ctx)
	p := &Process{cancel: cancel, done: make(chan struct{})}
	st := &stream{launched: make(chan pipes, 1)}
	go func() {
		defer close(p.done)
		defer cancel()
		p.res, p.err = run(ctx, spec, &o, st)
	}()
	select {
	case io := <-st.launched:
		p.Stdin, p.Stdout = io.stdin, io.stdout
		return p, nil
	case <-p.done:
		if p.err == nil {
			// The command ended before its input and output were handed
			// over: the call did not reach the helper.
			p.err = fault.New(fault.Unavailable, "sandbox: the command ended before it could be served")
		}
		return nil, p.err
	}
}
