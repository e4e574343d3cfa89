package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// plainSeeds are results the one-pass reading takes (the first four), and
// others it leaves to the SDK (which may read them otherwise).
var plainSeeds = []string{
	`{"content":[{"type":"text","text":"Echo: hello"}]}`,
	`{"content":[{"type":"text","text":"oops"}],"isError":true}`,
	`{"content":[{"type":"text","text":"a\nb \"q\" \u00e9 \ud83d\ude00"}],"structuredContent":null}`,
	`{"content":[{"type":"text","text":""}],"isError":false}`,
	`{"content":[{"type":"text","text":"x"}],"structuredContent":{"n":1}}`,
	`{"content":[{"type":"text","text":"x"},{"type":"text","text":"y"}]}`,
	`{"content":[{"type":"text","text":"x","annotations":{"priority":1}}]}`,
	`{"content":[{"type":"text","text":"x"}],"_meta":{"k":"v"}}`,
	`{"content":[{"type":"text","text":"x"}],"Content":[{"type":"text","text":"y"}]}`,
	`{"content":[{"type":"text","text":"x"}],"content":[{"type":"text","text":"y"}]}`,
	`{"content":[{"type":"text","text":"bad \ud800 surrogate"}]}`,
	"{\"content\":[{\"type\":\"text\",\"text\":\"bad \xff byte\"}]}",
	`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}`,
	`{"content":[{"type":"text","text":null}]}`,
	`{"content":[{"type":"text"}]}`,
	`{"content":[]}`,
	`{"content":null}`,
	`{"isError":"yes","content":[{"type":"text","text":"x"}]}`,
	`null`,
	`[]`,
}

// TestPlainResultMatchesSDK: every result the one-pass reading takes
// comes out as the SDK's decoding of it comes out.
func TestPlainResultMatchesSDK(t *testing.T) {
	for i, s := range plainSeeds {
		if checkPlainMatchesSDK(t, []byte(s)) != (i < 4) {
			t.Errorf("%s: taken in one pass: %v, want %v", s, i >= 4, i < 4)
		}
	}
}

func FuzzPlainResultMatchesSDK(f *testing.F) {
	for _, s := range plainSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkPlainMatchesSDK(t, raw) })
}

// checkPlainMatchesSDK reports whether readPlain took raw, failing t if
// what it made of it differs from what outcome makes of the SDK's
// decoding (for a tool without and one with an output schema).
func checkPlainMatchesSDK(t *testing.T, raw []byte) bool {
	t.Helper()
	p, ok := readPlain(raw)
	if !ok {
		return false
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("%s: taken in one pass, but the SDK refuses it: %v", raw, err)
	}
	for _, out := range []json.RawMessage{nil, json.RawMessage(`{"type":"object"}`)} {
		tool := &Tool{Upstream: "up", Name: "t", Public: "up__t", Definition: &Definition{OutputSchema: jsontext.Value(out)}}
		tool.outSchema = func() (*resolvedSchema, error) { return resolveSchema(out) }
		got, gerr := tool.plainOutcome(p, 1000)
		want, werr := tool.outcome(&res, 1000)
		if !reflect.DeepEqual(got, want) || errText(gerr) != errText(werr) {
			t.Fatalf("%s (output schema %s): one pass %+v, %v; the SDK's %+v, %v", raw, out, got, gerr, want, werr)
		}
	}
	return true
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return string(fault.CodeOf(err)) + ": " + err.Error()
}

// peer is the upstream's side of a pipeConn under test.
type peer struct {
	c        *pipeConn
	toServer *io.PipeReader // what the connection writes
	toClient *io.PipeWriter // what it reads
	lines    chan string
}

func newPeer(t *testing.T) *peer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &peer{c: newPipeConn(inR, outW, new(atomic.Bool)), toServer: outR, toClient: inW, lines: make(chan string, 16)}
	go func() {
		buf := make([]byte, 0, 4096)
		one := make([]byte, 1)
		for {
			if _, err := outR.Read(one); err != nil {
				close(p.lines)
				return
			}
			if one[0] == '\n' {
				p.lines <- string(buf)
				buf = buf[:0]
			} else {
				buf = append(buf, one[0])
			}
		}
	}()
	t.Cleanup(func() { p.c.Close(); inW.Close(); outR.Close() })
	return p
}

func (p *peer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.toClient, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (p *peer) next(t *testing.T) string {
	t.Helper()
	select {
	case l := <-p.lines:
		return l
	case <-time.After(time.Minute):
		t.Fatal("nothing written")
		return ""
	}
}

// reads runs the SDK's side of the connection: what Read returns.
func (p *peer) reads() chan jsonrpc.Message {
	ch := make(chan jsonrpc.Message, 16)
	go func() {
		defer close(ch)
		for {
			m, err := p.c.Read(context.Background())
			if err != nil {
				return
			}
			ch <- m
		}
	}()
	return ch
}

type callOutcome struct {
	raw json.RawMessage
	err error
}

func (p *peer) call(ctx context.Context, args string, token string) chan callOutcome {
	ch := make(chan callOutcome, 1)
	go func() {
		raw, err := p.c.call(ctx, "echo", json.RawMessage(args), token)
		ch <- callOutcome{raw, err}
	}()
	return ch
}

// TestPipeCall: a direct call's request is what the SDK writes for it
// (arguments on one line, the progress token in _meta), its response
// reaches it and not the SDK, whatever else the upstream sends between.
func TestPipeCall(t *testing.T) {
	p := newPeer(t)
	msgs := p.reads()
	got := p.call(context.Background(), "{\n  \"text\": \"a b\"\n}", "capkit-7")
	req := p.next(t)
	want := `{"jsonrpc":"2.0","id":"capkit-call-1","method":"tools/call","params":{"_meta":{"progressToken":"capkit-7"},"name":"echo","arguments":{"text":"a b"}}}`
	if req != want {
		t.Fatalf("request %s\nwant    %s", req, want)
	}
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"capkit-7","progress":1}}`)
	p.send(t, `{"jsonrpc":"2.0","id":"capkit-call-1","result":{"content":[{"type":"text","text":"a b"}]}}`)
	r := <-got
	if r.err != nil || string(r.raw) != `{"content":[{"type":"text","text":"a b"}]}` {
		t.Fatalf("got %s, %v", r.raw, r.err)
	}
	if m := <-msgs; m.(*jsonrpc.Request).Method != "notifications/progress" {
		t.Fatalf("the SDK got %+v", m)
	}

	// A response the one-pass reading refuses (a member given twice)
	// still reaches its call; the SDK's own responses reach the SDK.
	got = p.call(context.Background(), "", "")
	if req := p.next(t); !strings.Contains(req, `"id":"capkit-call-2"`) || !strings.Contains(req, `"arguments":{}`) {
		t.Fatalf("request %s", req)
	}
	p.send(t, `{"jsonrpc":"2.0","id":"capkit-call-2","result":{"a":1},"result":{"content":[]}}`)
	if r := <-got; r.err != nil || !strings.Contains(string(r.raw), "content") {
		t.Fatalf("got %s, %v", r.raw, r.err)
	}
	p.send(t, `{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}`)
	if m := <-msgs; m.(*jsonrpc.Response).ID.Raw() != int64(3) {
		t.Fatalf("the SDK got %+v", m)
	}

	// A JSON-RPC error reaches the call as one.
	got = p.call(context.Background(), `{}`, "")
	p.next(t)
	p.send(t, `{"jsonrpc":"2.0","id":"capkit-call-3","error":{"code":-32602,"message":"no"}}`)
	var werr *jsonrpc.Error
	if r := <-got; !errors.As(r.err, &werr) || werr.Code != -32602 {
		t.Fatalf("got %s, %v", r.raw, r.err)
	}
}

// TestPipeCancel: a call whose context ends returns at once and the
// upstream is told; its late response is the SDK's to drop.
func TestPipeCancel(t *testing.T) {
	p := newPeer(t)
	msgs := p.reads()
	ctx, cancel := context.WithCancel(context.Background())
	got := p.call(ctx, `{}`, "")
	p.next(t)
	cancel()
	if r := <-got; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("got %v", r.err)
	}
	want := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"capkit-call-1","reason":"context canceled"}}`
	if l := p.next(t); l != want {
		t.Fatalf("wrote %s\nwant  %s", l, want)
	}
	p.send(t, `{"jsonrpc":"2.0","id":"capkit-call-1","result":{"content":[]}}`)
	if m := <-msgs; m.(*jsonrpc.Response).ID.Raw() != "capkit-call-1" {
		t.Fatalf("the SDK got %+v", m)
	}
}

// TestPipeEnds: the calls in flight fail with mcp.ErrConnectionClosed
// when the upstream's output ends, at a message past the bound (which
// ends reading, marked), and later calls fail at once.
func TestPipeEnds(t *testing.T) {
	p := newPeer(t)
	msgs := p.reads()
	got := p.call(context.Background(), `{}`, "")
	p.next(t)
	go io.WriteString(p.toClient, strings.Repeat("x", limits.UpstreamMaxMessageBytes+1)+"\n")
	if r := <-got; !errors.Is(r.err, mcp.ErrConnectionClosed) {
		t.Fatalf("got %v", r.err)
	}
	if _, open := <-msgs; open || !p.c.over.Load() {
		t.Fatalf("reading goes on after a message past the bound (marked %v)", p.c.over.Load())
	}
	if _, err := p.c.call(context.Background(), "echo", nil, ""); !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Fatalf("a later call: %v", err)
	}
}
