package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/run/sandbox"
)

// BenchmarkEverythingEcho: one echo call of server-everything (node,
// over stdio) through Gateway.Call, the upstream uncontained and
// contained (with the run defaults' limits, as capkit serve starts it):
// the gateway's half of a call through capkit, without the client's
// hop. It needs the pinned servers (scripts/need-mcp-servers.sh; the
// node_modules folder in CAPKIT_MCP_SERVERS).
//
//	CAPKIT_MCP_SERVERS=$(bash scripts/need-mcp-servers.sh)/node_modules go test ./gateway -run '^$' -bench EverythingEcho
func BenchmarkEverythingEcho(b *testing.B) {
	mods := os.Getenv("CAPKIT_MCP_SERVERS")
	server := filepath.Join(mods, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(server); mods == "" || err != nil {
		b.Skip("CAPKIT_MCP_SERVERS does not hold server-everything")
	}
	exe, _ := os.Executable()
	for _, contain := range []bool{false, true} {
		name := map[bool]string{false: "uncontained", true: "contained"}[contain]
		b.Run(name, func(b *testing.B) {
			if contain && sandboxAvailable(b) != "" {
				b.Skip(sandboxAvailable(b))
			}
			up := Upstream{Name: "everything", Command: []string{"node", server, "stdio"}}
			o := &Options{Helper: []string{exe, sandbox.HelperArg}, Quarantine: b.TempDir()}
			if contain {
				up.Contain, up.ReadOnly = true, []string{mods}
				o.Limits = sandbox.Limits{MemoryBytes: limits.RunDefaultMemoryBytes, Processes: limits.RunDefaultProcesses,
					FileBytes: limits.RunDefaultFileBytes, OpenFiles: limits.RunDefaultOpenFiles, TmpBytes: limits.RunDefaultTmpBytes}
			}
			ctx := context.Background()
			reviews, err := ReviewUpstreams(ctx, []Upstream{up}, &Lock{}, o)
			if err != nil || reviews[0].Err != nil {
				b.Fatal(err, reviews)
			}
			lock := &Lock{}
			if _, err := Approve(lock, reviews, nil); err != nil {
				b.Fatal(err)
			}
			g, err := New([]Upstream{up}, lock, o)
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			tl := mustTool(b, g, "everything__echo")
			args, _ := json.Marshal(map[string]string{"message": "hello"})
			for range 1000 { // node's JIT warms up
				if _, err := g.Call(ctx, Key{Actor: "a"}, tl, args, 1000, nil); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if _, err := g.Call(ctx, Key{Actor: "a"}, tl, args, 1000, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPipeCall: a direct call on a pipeConn to an upstream in
// process that answers each request at once with one text block (over
// real pipes): capkit's half of the fast path with no process between.
//
//	go test ./gateway -run '^$' -bench PipeCall -benchmem
func BenchmarkPipeCall(b *testing.B) {
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	c := newPipeConn(inR, outW, new(atomic.Bool))
	defer func() { c.Close(); inW.Close(); outR.Close() }()
	go func() {
		for {
			if _, err := c.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	go func() {
		r := bufio.NewReader(outR)
		w := bufio.NewWriter(inW)
		for {
			l, err := r.ReadSlice('\n')
			if err != nil {
				return
			}
			_, rest, _ := bytes.Cut(l, []byte(`"id":`))
			id, _, _ := bytes.Cut(rest, []byte(`,`))
			w.WriteString(`{"jsonrpc":"2.0","id":`)
			w.Write(id)
			w.WriteString(`,"result":{"content":[{"type":"text","text":"Echo: hello"}]}}` + "\n")
			w.Flush()
		}
	}()
	args := json.RawMessage(`{"message":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // as the kernel gives each call
		raw, err := c.call(ctx, "echo", args, "")
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := readPlain(raw); !ok {
			b.Fatalf("%s", raw)
		}
	}
}
