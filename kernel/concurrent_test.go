package kernel

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// gate is a tool whose handler ignores its context: it enters, then
// returns only when release is closed or sent to.
type gate struct {
	rt      *Runtime
	entered chan struct{}
	release chan struct{}
}

func newGate(t *testing.T, maxConcurrent int, timeout time.Duration) *gate {
	return newGateWith(t, Policy{MaxConcurrent: maxConcurrent, Timeout: timeout})
}

// newGateWith is newGate with the tool's whole policy (its name is gate).
func newGateWith(t *testing.T, p Policy) *gate {
	t.Helper()
	g := &gate{entered: make(chan struct{}, 16), release: make(chan struct{})}
	b := NewBuilder(nil)
	p.Name = "gate"
	err := AddTool(b, p,
		Meta{Effect: capability.ReadFile, Hot: true, Description: "Waits at a gate."},
		func(ctx context.Context, _ *Call, _ struct{}) (echoOut, error) {
			g.entered <- struct{}{}
			<-g.release
			return echoOut{Echo: "through"}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if g.rt, err = b.Build(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(g.release) })
	return g
}

// start calls gate on a goroutine and waits until its handler runs.
func (g *gate) start(t *testing.T, s *Session) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), "gate", json.RawMessage(`{}`))
		done <- err
	}()
	select {
	case <-g.entered:
	case err := <-done:
		t.Fatalf("call refused: %v", err)
	}
	return done
}

func callGate(s *Session) error {
	_, err := s.Call(context.Background(), "gate", json.RawMessage(`{}`))
	return err
}

func TestMaxConcurrentEdge(t *testing.T) {
	g := newGate(t, 2, time.Minute)
	s := session(t, g.rt, false, capability.ReadFile)
	first, second := g.start(t, s), g.start(t, s)
	err := callGate(s)
	if codeOf(err) != fault.Limit || !strings.Contains(err.Error(), "2 calls are running") || !strings.Contains(err.Error(), "[tool.gate] max_concurrent") {
		t.Fatalf("third call at once: %v", err)
	}
	// The bound is the runtime's, not a session's.
	if err := callGate(session(t, g.rt, false, capability.ReadFile)); codeOf(err) != fault.Limit {
		t.Fatalf("third call from another session: %v", err)
	}
	// One release frees one of the two handlers, either of them.
	g.release <- struct{}{}
	var running <-chan error
	select {
	case err := <-first:
		running = second
		if err != nil {
			t.Fatal(err)
		}
	case err := <-second:
		running = first
		if err != nil {
			t.Fatal(err)
		}
	}
	third := g.start(t, s)
	g.release <- struct{}{}
	g.release <- struct{}{}
	for _, done := range []<-chan error{running, third} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// A handler abandoned at its deadline keeps its place until it returns:
// handlers that ignore their context cannot pile up without bound.
func TestAbandonedHandlerKeepsItsPlace(t *testing.T) {
	g := newGate(t, 1, 20*time.Millisecond)
	s := session(t, g.rt, false, capability.ReadFile)
	if err := <-g.start(t, s); codeOf(err) != fault.Limit || !strings.Contains(err.Error(), "time") {
		t.Fatalf("stuck call: %v", err)
	}
	if err := callGate(s); codeOf(err) != fault.Limit || !strings.Contains(err.Error(), "1 call is running") {
		t.Fatalf("call while the abandoned handler runs: %v", err)
	}
	g.release <- struct{}{} // the abandoned handler returns
	// Its place is free once it has returned; the next call's handler
	// runs (and then passes its own deadline).
	deadline := time.Now().Add(time.Minute)
	for {
		done := make(chan error, 1)
		go func() { done <- callGate(s) }()
		select {
		case <-g.entered:
			g.release <- struct{}{}
			<-done
			return
		case err := <-done:
			// Refused while the place is still held, or (at load) past
			// its 20 ms before its handler was entered: try again.
			retry := strings.Contains(err.Error(), "running") || strings.Contains(err.Error(), "time limit")
			if !retry || time.Now().After(deadline) {
				t.Fatalf("call after the abandoned handler returned: %v", err)
			}
		}
	}
}

func TestMaxConcurrentPolicy(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want int
		ok   bool
	}{
		{0, limits.DefaultMaxConcurrent, true},
		{1, 1, true},
		{limits.HardMaxConcurrent, limits.HardMaxConcurrent, true},
		{limits.HardMaxConcurrent + 1, 0, false},
		{-1, 0, false},
	} {
		p, err := Policy{Name: "x", MaxConcurrent: tc.n}.withDefaults()
		if (err == nil) != tc.ok || (tc.ok && p.MaxConcurrent != tc.want) {
			t.Errorf("MaxConcurrent %d: got %d, %v", tc.n, p.MaxConcurrent, err)
		}
	}
}

// TestPlaceGivenBackHoweverTheHandlerEnds: a handler that panics or calls
// runtime.Goexit still gives its place back, and a call refused for the
// bound does not spend the session's call budget.
func TestPlaceGivenBackHoweverTheHandlerEnds(t *testing.T) {
	b := NewBuilder(nil)
	ends := map[string]func(){"panics": func() { panic("boom") }, "exits": runtime.Goexit}
	for name, end := range ends {
		err := AddTool(b, Policy{Name: name, MaxConcurrent: 1, MaxCalls: 3, Timeout: 100 * time.Millisecond},
			Meta{Effect: capability.ReadFile, Hot: true, Description: "Ends badly."},
			func(ctx context.Context, _ *Call, _ struct{}) (echoOut, error) { end(); return echoOut{}, nil })
		if err != nil {
			t.Fatal(err)
		}
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	s := session(t, rt, false, capability.ReadFile)
	for name := range ends {
		for i := range 3 {
			_, err := s.Call(context.Background(), name, json.RawMessage(`{}`))
			if c := codeOf(err); c == fault.Limit && strings.Contains(err.Error(), "running") {
				t.Fatalf("%s, call %d: its place was not given back: %v", name, i+1, err)
			}
		}
	}
	g := newGateWith(t, Policy{MaxConcurrent: 1, MaxCalls: 2, Timeout: time.Minute})
	gs := session(t, g.rt, false, capability.ReadFile)
	first := g.start(t, gs)
	for range 3 {
		if err := callGate(gs); codeOf(err) != fault.Limit {
			t.Fatalf("call past the bound: %v", err)
		}
	}
	g.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// The refused calls spent nothing: the session's budget of two
	// still admits the second.
	next := g.start(t, gs)
	g.release <- struct{}{}
	if err := <-next; err != nil {
		t.Fatal(err)
	}
}
