// Package workpool runs work on goroutines that outlive one piece of it:
// the kernel's tool handlers and the audit handler's writers. A goroutine
// made for each piece grows its stack again (a copy of the whole stack)
// every time its work is deep; a pooled one grows it once. The pool has
// no queue: a piece goes to a goroutine that waits for work, or to a new
// one when none waits, so pieces never wait behind each other. No module
// offers a pool of that shape (the ones there are queue work behind a
// fixed number of goroutines), and it is a few lines.
package workpool

import "time"

// Pool runs each piece of work it is given with its run function on a
// goroutine of its own. A goroutine exits between one and two idle
// periods after its last piece: its timer is not reset per piece (a
// reset on every call costs the kernel about the time of a small call:
// kernel's BenchmarkKernelCall).
type Pool[T any] struct {
	idle chan T // unbuffered: a send succeeds only when a goroutine waits
	wait time.Duration
	run  func(T)
}

// New returns a pool running each piece with run, its goroutines exiting
// once idle for a period of idle (up to two).
func New[T any](idle time.Duration, run func(T)) *Pool[T] {
	return &Pool[T]{idle: make(chan T), wait: idle, run: run}
}

// Start runs w on an idle goroutine, or on a new one when none waits; it
// does not wait for w to run.
func (p *Pool[T]) Start(w T) {
	select {
	case p.idle <- w:
	default:
		go p.loop(w)
	}
}

// loop runs w, then every piece handed to it, until none came for a whole
// idle period.
func (p *Pool[T]) loop(w T) {
	timer := time.NewTimer(p.wait)
	defer timer.Stop()
	for {
		p.run(w)
		busy := true
		for got := false; !got; {
			select {
			case w = <-p.idle:
				got = true
			case <-timer.C:
				if !busy {
					return
				}
				busy = false
				timer.Reset(p.wait)
			}
		}
	}
}
