package policy

import (
	"context"
	"sync"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
)

// ErrNotRead marks a write or edit refused because this session has not
// read the file (a conflict), for a front door that can say why its
// sessions never have.
var ErrNotRead = fault.NewMark("policy: the session has not read the file")

// NewEvents is a new seam with the policy attached: what a host passes to
// the file tools.
func NewEvents() *files.Events {
	ev := files.NewEvents()
	if err := Attach(ev); err != nil {
		panic("policy: attaching to new events: " + err.Error()) // fresh events hold no gate
	}
	return ev
}

// Attach registers the policy on ev: both gates and an observer. It fails
// if another gate holds either slot.
func Attach(ev *files.Events) error {
	if err := ev.SetWriteGate(writeGate); err != nil {
		return err
	}
	if err := ev.SetEditGate(editGate); err != nil {
		return err
	}
	ev.OnObserved(observe)
	return nil
}

type stateKey struct{}

// state is one session's observations: file → version it last saw.
type state struct {
	mu   sync.Mutex
	seen map[string]files.Version
}

func stateOf(s files.Session) *state {
	if s == nil {
		return nil
	}
	return s.Local(stateKey{}, func() any { return &state{seen: map[string]files.Version{}} }).(*state)
}

func fileKey(root, name string) string { return root + "\x00" + name }

func (st *state) lookup(root, name string) (files.Version, bool) {
	if st == nil {
		return files.Version{}, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	v, ok := st.seen[fileKey(root, name)]
	return v, ok
}

func writeGate(_ context.Context, e *files.Expectation) error {
	if !e.Exists {
		// Creating: guarded to still not exist, so a file created in
		// between is not overwritten unseen.
		e.Guard = files.Guard{Enabled: true}
		return nil
	}
	v, ok := stateOf(e.Session).lookup(e.Root, e.Name)
	if !ok {
		return fault.Wrap(fault.Conflict, ErrNotRead, "%s: the file exists and this session has not read it; read it with read_file first (or write to a new path). Nothing was written", e.Name)
	}
	return guardWith(e, v)
}

func editGate(_ context.Context, e *files.Expectation) error {
	v, ok := stateOf(e.Session).lookup(e.Root, e.Name)
	if !ok {
		return fault.Wrap(fault.Conflict, ErrNotRead, "%s: this session has not read the file; read it with read_file first, then edit. Nothing was changed", e.Name)
	}
	return guardWith(e, v)
}

func guardWith(e *files.Expectation, seen files.Version) error {
	if !e.Exists || e.Current != seen {
		return fault.New(fault.Conflict, "%s: the file changed since this session read it; read it again, then retry. Nothing was changed", e.Name)
	}
	e.Guard = files.Guard{Enabled: true, Version: seen}
	return nil
}

func observe(_ context.Context, o files.Observation) {
	st := stateOf(o.Session)
	if st == nil || o.Version.IsZero() {
		return
	}
	st.mu.Lock()
	st.seen[fileKey(o.Root, o.Name)] = o.Version
	st.mu.Unlock()
}
