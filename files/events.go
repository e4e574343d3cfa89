package files

import (
	"context"
	"errors"
	"sync"

	"github.com/capkit/capkit/fault"
)

// Session is the party a file operation is done for, as the policy events
// see it: a place to keep per-session state. *kernel.Session implements it.
type Session interface {
	// Local returns the session's value for key, creating it with init on
	// first use.
	Local(key any, init func() any) any
}

// Op is the kind of file operation an event is about.
type Op uint8

// The operations the file tools report.
const (
	OpRead Op = iota + 1
	OpWrite
	OpEdit
)

func (o Op) String() string {
	switch o {
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	case OpEdit:
		return "edit"
	}
	return "unknown"
}

// Expectation is a mutation the executor is about to make, offered to a
// gate before anything is written. The gate may veto it (return a
// *fault.Error) or set the Guard the mutation will be made under.
type Expectation struct {
	Session Session
	Op      Op
	// Root and Name locate the file: its target's root and name.
	Root, Name string
	// Exists and Current describe the file as the executor found it just
	// before the event.
	Exists  bool
	Current Version
	// Guard is the precondition of the mutation. The executor proposes
	// one (for an edit, the version it read; for a write, none); a gate
	// may replace it.
	Guard Guard
}

// Guard is a version precondition: when Enabled, the mutation happens only
// if the file's version then equals Version (the zero Version: only if the
// file does not exist).
type Guard struct {
	Enabled bool
	Version Version
}

// Observation reports a successful read, write or edit and the version of
// the file the session now knows.
type Observation struct {
	Session    Session
	Op         Op
	Root, Name string
	Version    Version
}

// Gate decides on an Expectation. A non-nil error vetoes the mutation and
// is returned to the caller as is, so it should be a *fault.Error.
type Gate func(ctx context.Context, e *Expectation) error

// Observer is told about an Observation. It cannot fail the operation,
// which has already happened.
type Observer func(ctx context.Context, o Observation)

// ErrGateTaken is returned when a gate slot already holds a gate.
var ErrGateTaken = fault.NewMark("fs: a gate is already registered for this event")

// Events is the policy seam of the file tools: a write-expectation gate and
// an edit-expectation gate (one slot each, so exactly one policy decides),
// and any number of observers. The executor dispatches the events; a
// policy plugin such as files/policy registers on them.
//
// Without any gate the tools work unconstrained: writes are unguarded and
// an edit is guarded only by the version the executor itself read.
//
// Registration is expected at setup time; dispatch is safe for concurrent
// use, also while registering.
type Events struct {
	mu        sync.RWMutex
	writeGate Gate
	editGate  Gate
	observers []Observer
}

// NewEvents returns an Events with no listeners.
func NewEvents() *Events { return &Events{} }

// SetWriteGate registers the write-expectation gate. It fails with
// ErrGateTaken if one is registered.
func (ev *Events) SetWriteGate(g Gate) error { return ev.setGate(&ev.writeGate, g) }

// SetEditGate registers the edit-expectation gate. It fails with
// ErrGateTaken if one is registered.
func (ev *Events) SetEditGate(g Gate) error { return ev.setGate(&ev.editGate, g) }

func (ev *Events) setGate(slot *Gate, g Gate) error {
	if g == nil {
		return errors.New("fs: nil gate")
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if *slot != nil {
		return ErrGateTaken
	}
	*slot = g
	return nil
}

// OnObserved registers an observer.
func (ev *Events) OnObserved(o Observer) {
	ev.mu.Lock()
	ev.observers = append(ev.observers, o)
	ev.mu.Unlock()
}

// ExpectWrite runs the write gate on e, if there is one.
func (ev *Events) ExpectWrite(ctx context.Context, e *Expectation) error {
	ev.mu.RLock()
	g := ev.writeGate
	ev.mu.RUnlock()
	if g == nil {
		return nil
	}
	return g(ctx, e)
}

// ExpectEdit runs the edit gate on e, if there is one.
func (ev *Events) ExpectEdit(ctx context.Context, e *Expectation) error {
	ev.mu.RLock()
	g := ev.editGate
	ev.mu.RUnlock()
	if g == nil {
		return nil
	}
	return g(ctx, e)
}

// Observed tells every observer about o.
func (ev *Events) Observed(ctx context.Context, o Observation) {
	ev.mu.RLock()
	obs := ev.observers
	ev.mu.RUnlock()
	for _, f := range obs {
		f(ctx, o)
	}
}
