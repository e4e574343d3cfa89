package kernel

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
)

// outcome is what Start delivered, and how often.
type outcome struct {
	res   *Result
	err   error
	calls atomic.Int32
	done  chan struct{}
}

func start(s *Session, ctx context.Context, tool, args string) *outcome {
	o := &outcome{done: make(chan struct{})}
	s.Start(ctx, tool, json.RawMessage(args), func(res *Result, err error) {
		if o.calls.Add(1) == 1 {
			o.res, o.err = res, err
			close(o.done)
		}
	})
	return o
}

func (o *outcome) wait(t *testing.T) (*Result, error) {
	t.Helper()
	select {
	case <-o.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Start never delivered")
	}
	return o.res, o.err
}

// Start delivers what Call returns, once.
func TestStartMatchesCall(t *testing.T) {
	f := newFixture(t)
	cases := []struct{ tool, args string }{
		{"echo", `{"text":"hi"}`},
		{"echo", ``},
		{"nope", `{}`},
		{"write_thing", `{"text":"x"}`},
		{"echo", `{"text":"` + strings.Repeat("a", 64-10) + `"}`},
		{"echo", `{"text":1}`},
		{"echo", `{"text":"abcdefgh","n":4}`},
		{"io_fail", `{}`},
		{"panics", `{}`},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+c.args, func(t *testing.T) {
			byCall := session(t, f.rt, false, capability.ReadFile)
			byStart := session(t, f.rt, false, capability.ReadFile)
			want, wantErr := byCall.Call(context.Background(), c.tool, json.RawMessage(c.args))
			o := start(byStart, context.Background(), c.tool, c.args)
			got, err := o.wait(t)
			if codeOf(err) != codeOf(wantErr) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("Start: %v, Call: %v", err, wantErr)
			}
			if (got == nil) != (want == nil) || got != nil && (got.Text != want.Text || string(got.Structured) != string(want.Structured)) {
				t.Fatalf("Start: %+v, Call: %+v", got, want)
			}
			time.Sleep(10 * time.Millisecond)
			if n := o.calls.Load(); n != 1 {
				t.Fatalf("done ran %d times", n)
			}
		})
	}
	if n := strings.Count(f.audit.String(), `"msg":"call"`); n != 2*len(cases) {
		t.Fatalf("%d audit events for %d calls", n, 2*len(cases))
	}
}

// A stuck handler ends at its deadline, once, and its late return changes
// nothing; a canceled context ends the call as Call's would.
func TestStartDeadlineAndCancel(t *testing.T) {
	f := newFixture(t)
	s := session(t, f.rt, false, capability.ReadFile)
	began := time.Now()
	o := start(s, context.Background(), "stuck", `{}`)
	if _, err := o.wait(t); codeOf(err) != fault.Limit || !strings.Contains(err.Error(), "time limit") {
		t.Fatalf("stuck call: %v", err)
	}
	if d := time.Since(began); d < 50*time.Millisecond {
		t.Fatalf("ended after %v, before its deadline", d)
	}
	close(f.block)
	<-f.released
	time.Sleep(10 * time.Millisecond)
	if n := o.calls.Load(); n != 1 {
		t.Fatalf("done ran %d times", n)
	}

	bl := newBlocking(t)
	bs := session(t, bl.rt, false, capability.ReadFile)
	ctx, cancel := context.WithCancel(context.Background())
	o = start(bs, ctx, "wait_long", `{}`)
	hctx := <-bl.ctx
	cancel()
	if _, err := o.wait(t); codeOf(err) != fault.Unavailable {
		t.Fatalf("canceled call: %v", err)
	}
	<-hctx.Done() // the cancellation reached the handler
	if hctx.Err() != context.Canceled {
		t.Fatalf("handler's err: %v", hctx.Err())
	}

	o = start(bs, ctx, "wait_long", `{}`)
	if _, err := o.wait(t); codeOf(err) != fault.Unavailable {
		t.Fatalf("call with an ended context: %v", err)
	}
	time.Sleep(10 * time.Millisecond)
	if n := o.calls.Load(); n != 1 {
		t.Fatalf("done ran %d times", n)
	}
}

// blocking is a runtime whose tool waits for its context to end and keeps
// it, so tests can see what the handler saw.
type blocking struct {
	rt  *Runtime
	ctx chan context.Context
}

func newBlocking(t *testing.T) *blocking {
	t.Helper()
	bl := &blocking{ctx: make(chan context.Context, 16)}
	b := NewBuilder(nil)
	err := AddTool(b, Policy{Name: "wait", Timeout: 30 * time.Millisecond}, Meta{Effect: capability.ReadFile, Description: "Waits."},
		func(ctx context.Context, _ *Call, _ struct{}) (echoOut, error) {
			bl.ctx <- ctx
			<-ctx.Done()
			return echoOut{}, ctx.Err()
		})
	if err == nil {
		err = AddTool(b, Policy{Name: "wait_long", Timeout: time.Minute}, Meta{Effect: capability.ReadFile, Description: "Waits long."},
			func(ctx context.Context, _ *Call, _ struct{}) (echoOut, error) {
				bl.ctx <- ctx
				<-ctx.Done()
				return echoOut{}, ctx.Err()
			})
	}
	if err == nil {
		err = AddTool(b, Policy{Name: "keep", Timeout: time.Minute}, Meta{Effect: capability.ReadFile, Description: "Keeps its context."},
			func(ctx context.Context, _ *Call, _ struct{}) (echoOut, error) {
				bl.ctx <- ctx
				return echoOut{}, nil
			})
	}
	if err != nil {
		t.Fatal(err)
	}
	if bl.rt, err = b.Build(); err != nil {
		t.Fatal(err)
	}
	return bl
}

// The handler's context has the policy's deadline, ends with it (the
// failure is the time limit), and ends when the call does.
func TestHandlerContext(t *testing.T) {
	bl := newBlocking(t)
	s := session(t, bl.rt, false, capability.ReadFile)
	before := time.Now()
	_, err := s.Call(context.Background(), "wait", json.RawMessage(`{}`))
	if codeOf(err) != fault.Limit {
		t.Fatalf("wait: %v", err)
	}
	ctx := <-bl.ctx
	if d, ok := ctx.Deadline(); !ok || d.Before(before.Add(30*time.Millisecond)) || d.After(time.Now()) {
		t.Fatalf("deadline %v %v", d, ok)
	}
	if ctx.Err() != context.DeadlineExceeded {
		t.Fatalf("err after the deadline: %v", ctx.Err())
	}

	for _, call := range []func() error{
		func() error { _, err := s.Call(context.Background(), "keep", nil); return err },
		func() error { o := start(s, context.Background(), "keep", ``); _, err := o.wait(t); return err },
	} {
		if err := call(); err != nil {
			t.Fatal(err)
		}
		ctx := <-bl.ctx
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the handler's context outlived the call")
		}
		if ctx.Err() != context.Canceled {
			t.Fatalf("err after the call: %v", ctx.Err())
		}
	}
}
