package mcpserver

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// pooledOut's text lives in a buffer its Release overwrites, as a pooled
// buffer reused by the next call would be: a transport that released it
// before writing would send the overwritten bytes.
type pooledOut struct {
	buf      []byte
	released *atomic.Int32
	Bytes    int `json:"bytes"`
}

func (p pooledOut) ToolText() string { return unsafe.String(unsafe.SliceData(p.buf), len(p.buf)) }

func (p pooledOut) Release() {
	p.released.Add(1)
	for i := range p.buf {
		p.buf[i] = 'X'
	}
}

func pooledServer(t *testing.T, released *atomic.Int32) *Server {
	t.Helper()
	b := kernel.NewBuilder(nil)
	err := kernel.AddTool(b, kernel.Policy{Name: "pooled", MaxCalls: limits.HardMaxCalls, MaxOutputBytes: 8 * limits.MiB},
		kernel.Meta{Effect: capability.ReadFile, Hot: true, Description: "Returns pooled text."},
		func(_ context.Context, _ *kernel.Call, in bigIn) (pooledOut, error) {
			return pooledOut{buf: []byte(bigText(in.Bytes)), released: released, Bytes: in.Bytes}, nil
		})
	if err == nil {
		err = kernel.AddTool(b, kernel.Policy{Name: "pooled_wait"},
			kernel.Meta{Effect: capability.ReadFile, Hot: true, Description: "Returns pooled text once canceled."},
			func(ctx context.Context, _ *kernel.Call, in bigIn) (pooledOut, error) {
				<-ctx.Done()
				return pooledOut{buf: []byte(bigText(in.Bytes)), released: released, Bytes: in.Bytes}, nil
			})
	}
	if err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return New(rt, newSessionFunc(rt), nil)
}

// The stdio paths that write a result themselves release it once, after
// writing it; the paths that hand the text to the SDK never release it
// (the garbage collector takes it).
func TestResultReleasedOnceAfterWriting(t *testing.T) {
	modes := []struct {
		mode     transportMode
		releases int32
	}{
		{transportMode{"stdio", connectStdio}, 1},
		{transportMode{"stdio-sdk-request", connectStdioSDKRequest}, 1},
		{transportMode{"stdio-nofast", connectStdioNoFast}, 0},
		{transportMode{"sdk", connectSDK}, 0},
		{transportMode{"http", connectHTTP}, 0},
	}
	for _, m := range modes {
		t.Run(m.mode.name, func(t *testing.T) {
			for _, n := range []int{10, flushBytes + 3*escapeChunkBytes} {
				var released atomic.Int32
				cs := m.mode.connect(t, pooledServer(t, &released), nil, "2025-11-25")
				r := call(t, cs, "pooled", map[string]any{"bytes": n})
				if got, want := text(t, r), replaceInvalid(bigText(n)); got != want {
					t.Fatalf("n=%d: text differs (released before it was written?): %.80q", n, got)
				}
				deadline := time.Now().Add(5 * time.Second)
				for released.Load() < m.releases && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				time.Sleep(10 * time.Millisecond)
				if got := released.Load(); got != m.releases {
					t.Fatalf("n=%d: released %d times, want %d", n, got, m.releases)
				}
			}
		})
	}
}

// A direct call the client cancels gets no response; the result its
// handler returns anyway is released (by the kernel: nobody will write it).
func TestCancelledDirectCallReleases(t *testing.T) {
	var released atomic.Int32
	p := startRaw(t, pooledServer(t, &released), 0)
	p.initialize()
	p.send(`{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"pooled_wait","arguments":{"bytes":10}}}` + "\n")
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w"}}` + "\n")
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pooled","arguments":{"bytes":10}}}` + "\n")
	if r := p.next(); r.ID != 2.0 {
		t.Fatalf("first response is for %v, want 2 (the cancelled call must get none)", r.ID)
	}
	deadline := time.Now().Add(5 * time.Second)
	for released.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	if got := released.Load(); got != 2 {
		t.Fatalf("released %d times, want 2 (one per result)", got)
	}
}
