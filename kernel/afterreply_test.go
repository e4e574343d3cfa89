package kernel

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capkit/capkit/capability"
)

// afterReplies is a runtime whose tool "later" registers AfterReply work
// that records whether the call's answer had been handed back when it ran
// (and whether the handler had returned); "late" registers it only after
// its deadline passed (the answer, a time limit, long sent).
type afterReplies struct {
	rt      *Runtime
	replied atomic.Bool   // set by Start's done once it has the answer
	handled atomic.Bool   // set by the handler as it returns
	ran     chan bool     // replied, or for Call handled, when the work ran
	release chan struct{} // lets "late" return
	byCall  bool
}

func newAfterReplies(t *testing.T) *afterReplies {
	t.Helper()
	a := &afterReplies{ran: make(chan bool, 4), release: make(chan struct{})}
	work := func() {
		if a.byCall {
			a.ran <- a.handled.Load()
			return
		}
		a.ran <- a.replied.Load()
	}
	b := NewBuilder(nil)
	err := AddTool(b, Policy{Name: "later"}, Meta{Effect: capability.ReadFile, Description: "Defers work."},
		func(ctx context.Context, c *Call, _ struct{}) (echoOut, error) {
			c.AfterReply(work)
			time.Sleep(5 * time.Millisecond) // the work must still wait for the answer
			a.handled.Store(true)
			return echoOut{}, nil
		})
	if err == nil {
		err = AddTool(b, Policy{Name: "late", Timeout: 20 * time.Millisecond}, Meta{Effect: capability.ReadFile, Description: "Defers work late."},
			func(ctx context.Context, c *Call, _ struct{}) (echoOut, error) {
				<-a.release
				c.AfterReply(work)
				return echoOut{}, nil
			})
	}
	if err != nil {
		t.Fatal(err)
	}
	if a.rt, err = b.Build(); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *afterReplies) wait(t *testing.T) bool {
	t.Helper()
	select {
	case replied := <-a.ran:
		return replied
	case <-time.After(10 * time.Second):
		t.Fatal("the AfterReply work never ran")
	}
	return false
}

// TestAfterReply: work a handler defers runs once the answer is handed
// back (Start: after done; Call: after Call returns), and at once when
// registered after that.
func TestAfterReply(t *testing.T) {
	a := newAfterReplies(t)
	s := session(t, a.rt, false, capability.ReadFile)
	s.Start(context.Background(), "later", json.RawMessage(`{}`), func(*Result, error) {
		time.Sleep(5 * time.Millisecond) // writing the answer
		a.replied.Store(true)
	})
	if !a.wait(t) {
		t.Error("Start: the work ran before done returned")
	}
	a.byCall = true
	a.handled.Store(false)
	if _, err := s.Call(context.Background(), "later", nil); err != nil {
		t.Fatal(err)
	}
	if !a.wait(t) {
		t.Error("Call: the work ran before the handler returned")
	}
	o := start(s, context.Background(), "late", `{}`)
	if _, err := o.wait(t); err == nil {
		t.Fatal("late: no time limit")
	}
	close(a.release)
	a.wait(t)
}
