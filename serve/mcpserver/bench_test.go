package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/capkit/capkit/limits"
)

// benchPeer is a minimal client over real pipes, so that the benchmarks
// measure the server: it writes request lines and reads response lines
// without decoding them.
type benchPeer struct {
	w    *os.File
	r    *bufio.Reader
	stop func()
}

func startBenchPeer(b *testing.B, opts *Options) *benchPeer {
	b.Helper()
	return startBenchPeerOn(b, newTestServer(b, opts), false)
}

// startBenchPeerOn connects a benchPeer to s, over pipes or, as Node
// starts a server, over socket pairs.
func startBenchPeerOn(b *testing.B, s *Server, sockets bool) *benchPeer {
	b.Helper()
	sr, cw := benchPair(b, sockets)
	cr, sw := benchPair(b, sockets)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.ServeStdio(ctx, sr, sw)
		close(done)
	}()
	p := &benchPeer{w: cw, r: bufio.NewReaderSize(cr, 256*limits.KiB)}
	p.stop = func() {
		cw.Close()
		<-done
		cancel()
		sw.Close()
		cr.Close()
	}
	p.roundTrip(b, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`+"\n", nil)
	if _, err := io.WriteString(cw, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	return p
}

// benchPair is a pipe or a socket pair: its read end, its write end.
func benchPair(b *testing.B, socket bool) (r, w *os.File) {
	if socket {
		return socketPair(b)
	}
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	return r, w
}

// roundTrip writes one request and reads one response line, returning its
// length; head receives the line's first bytes.
func (p *benchPeer) roundTrip(b *testing.B, req string, head []byte) int {
	if _, err := io.WriteString(p.w, req); err != nil {
		b.Fatal(err)
	}
	n := 0
	for {
		chunk, err := p.r.ReadSlice('\n')
		if n == 0 && head != nil {
			copy(head, chunk)
		}
		n += len(chunk)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
}

// benchModes are the stdio paths: the direct call path (the default), the
// SDK's request handling with the result fast path, and the SDK alone.
var benchModes = []struct {
	name string
	opts Options
}{
	{"direct", Options{}},
	{"sdk-request", Options{disableDirect: true}},
	{"sdk", Options{disableDirect: true, disableFastPath: true}},
}

func benchCall(b *testing.B, opts Options, tool, args string) {
	p := startBenchPeer(b, &opts)
	defer p.stop()
	benchToolsCall(b, p, tool, args)
}

// benchToolsCall times tools/call round trips of tool with args over p,
// after one checked to succeed.
func benchToolsCall(b *testing.B, p *benchPeer, tool, args string) {
	req := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s}}`+"\n", tool, args)
	head := make([]byte, 200)
	n := p.roundTrip(b, req, head)
	if !bytes.Contains(head, []byte(`"result"`)) || bytes.Contains(head, []byte(`"isError"`)) {
		b.Fatalf("unexpected response %q", head)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuMeter(b)
	for b.Loop() {
		p.roundTrip(b, req, nil)
	}
	cpu()
}

// BenchmarkStdioSmallCall is one small tools/call round trip over pipes:
// framing, the SDK's dispatch, the kernel, the response.
func BenchmarkStdioSmallCall(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) { benchCall(b, m.opts, "echo", `{"text":"hello"}`) })
	}
}

// BenchmarkStdio4MiBResult is a tools/call returning 4 MiB of text that
// needs quoting (newlines, tabs, quotes) over pipes.
func BenchmarkStdio4MiBResult(b *testing.B) {
	args := fmt.Sprintf(`{"bytes":%d}`, 4*limits.MiB)
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) { benchCall(b, m.opts, "big", args) })
	}
}
