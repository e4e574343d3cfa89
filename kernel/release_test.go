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

// pooledOut is a result whose text is "pooled": Release counts.
type pooledOut struct {
	N        int `json:"n"`
	text     string
	released *atomic.Int32
}

func (p pooledOut) ToolText() string { return p.text }
func (p pooledOut) Release()         { p.released.Add(1) }

type releaseFixture struct {
	rt       *Runtime
	released atomic.Int32
	gate     chan struct{}
}

func newReleaseFixture(t *testing.T) *releaseFixture {
	t.Helper()
	f := &releaseFixture{gate: make(chan struct{})}
	b := NewBuilder(nil)
	type args struct {
		Size int `json:"size"`
	}
	h := func(ctx context.Context, _ *Call, in args) (pooledOut, error) {
		return pooledOut{N: in.Size, text: strings.Repeat("x", in.Size), released: &f.released}, nil
	}
	slow := func(ctx context.Context, c *Call, in args) (pooledOut, error) {
		<-f.gate
		return h(ctx, c, in)
	}
	for _, err := range []error{
		AddTool(b, Policy{Name: "pooled", MaxOutputBytes: 100}, Meta{Effect: capability.ReadFile, Description: "d"}, h),
		AddTool(b, Policy{Name: "slow", Timeout: 20 * time.Millisecond}, Meta{Effect: capability.ReadFile, Description: "d"}, slow),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if f.rt, err = b.Build(); err != nil {
		t.Fatal(err)
	}
	return f
}

// eventually waits for the count to reach want, then checks it stays.
func (f *releaseFixture) expect(t *testing.T, want int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for f.released.Load() < want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	if n := f.released.Load(); n != want {
		t.Fatalf("released %d times, want %d", n, want)
	}
}

func TestResultRelease(t *testing.T) {
	f := newReleaseFixture(t)
	s := session(t, f.rt, false, capability.ReadFile)

	// A delivered result is released by its consumer, once.
	res, err := s.Call(context.Background(), "pooled", json.RawMessage(`{"size":10}`))
	if err != nil || res.Text != strings.Repeat("x", 10) {
		t.Fatalf("%v %+v", err, res)
	}
	f.expect(t, 0)
	res.Release()
	res.Release()
	f.expect(t, 1)

	// A result over the output bound is released by the kernel.
	if _, err := s.Call(context.Background(), "pooled", json.RawMessage(`{"size":100}`)); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("over the bound: %v", err)
	}
	f.expect(t, 2)
	o := start(s, context.Background(), "pooled", `{"size":100}`)
	if _, err := o.wait(t); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("over the bound (Start): %v", err)
	}
	f.expect(t, 3)

	// A result returned after the call was abandoned is released by the
	// kernel, for Call and for Start.
	if _, err := s.Call(context.Background(), "slow", json.RawMessage(`{"size":1}`)); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("slow: %v", err)
	}
	o = start(s, context.Background(), "slow", `{"size":1}`)
	if _, err := o.wait(t); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("slow (Start): %v", err)
	}
	f.expect(t, 3)
	close(f.gate)
	f.expect(t, 5)

	// Results without pooled memory: Release does nothing.
	plain, err := Encode(echoOut{Echo: "a"})
	if err != nil {
		t.Fatal(err)
	}
	plain.Release()
	(&Result{Text: "t"}).Release()
}
