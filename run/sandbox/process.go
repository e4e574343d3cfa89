package sandbox

import (
	"context"
	"io"
	"os"
	"sync"
)

// Process is a command Start runs for as long as it lives: a server that
// speaks over its standard input and output (an MCP server on stdio),
// contained exactly as Run contains a command: the same container, the
// same limits, the same network through Options.Proxy alone, every
// process it starts killed with it, and what it leaves at a protected
// name moved to the quarantine once it is gone.
//
// What differs from Run: standard input and output are pipes the caller
// holds (Stdin, Stdout) instead of bytes given and a bounded copy kept;
// standard error is kept as Run keeps it (head and tail, bounded), for
// Wait's result. The command runs until it exits, Kill is called, or
// Start's context ends; the CPU-time bound (Limits.CPUSeconds) counts
// its whole life.
type Process struct {
	// Stdin is the command's standard input; closing it is how a server
	// on stdio is asked to end.
	Stdin io.WriteCloser
	// Stdout is the command's standard output. A caller that stops
	// reading it stops the command once the pipe is full.
	Stdout io.ReadCloser

	cancel context.CancelFunc
	done   chan struct{}
	res    *Result
	err    error
	close  sync.Once
}

// stream is what Start takes from a run instead of Run's input bytes and
// output copy: the command's standard input and output, handed over once
// its call is sent.
type stream struct {
	launched chan pipes
}

type pipes struct{ stdin, stdout *os.File }

// Kill kills the command and every process it started, and returns at
// once; Wait says how it ended.
func (p *Process) Kill() { p.cancel() }

// Done is closed once the command has ended and Wait's result is ready.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the command and every process it started to end, closes
// Stdin and Stdout, and says how it ended, as Run would (Killed when Kill
// or the context ended it), with Result.Stdout empty: the caller read it.
func (p *Process) Wait() (*Result, error) {
	<-p.done
	p.close.Do(func() {
		p.Stdin.Close()
		p.Stdout.Close()
	})
	return p.res, p.err
}
