package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

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

// peer is the upstream's side of a pipeConn under test, over real pipes
// (as an upstream process's are: writes have deadlines). It reads what
// the connection writes only from its first next (until then it is an
// upstream that reads nothing: the pipe holds 64 KiB).
type peer struct {
	c        *pipeConn
	toServer *os.File // what the connection writes
	toClient *os.File // what it reads
	lines    chan string
	listen   sync.Once
}

func newPeer(t *testing.T) *peer {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{c: newPipeConn(inR, outW, new(atomic.Bool)), toServer: outR, toClient: inW, lines: make(chan string, 1024)}
	t.Cleanup(func() { p.c.Close(); inW.Close(); outR.Close() })
	return p
}

// hear starts reading what the connection writes.
func (p *peer) hear() {
	p.listen.Do(func() {
		go func() {
			defer close(p.lines)
			r := bufio.NewReaderSize(p.toServer, 1<<20)
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				p.lines <- strings.TrimSuffix(l, "\n")
			}
		}()
	})
}

func (p *peer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.toClient, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (p *peer) next(t *testing.T) string {
	t.Helper()
	p.hear()
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

// sentinel is a notification a test sends last, to know that what it
// sent before has been read.
const sentinel = `{"jsonrpc":"2.0","method":"notifications/sentinel"}`

// sdkUntilSentinel is what the SDK got before the sentinel: a response
// as "response ID", a request or notification as its method.
func sdkUntilSentinel(t *testing.T, msgs chan jsonrpc.Message) []string {
	t.Helper()
	var got []string
	for m := range msgs {
		switch m := m.(type) {
		case *jsonrpc.Request:
			if m.Method == "notifications/sentinel" {
				return got
			}
			got = append(got, m.Method)
		case *jsonrpc.Response:
			got = append(got, fmt.Sprint("response ", m.ID.Raw()))
		}
	}
	t.Fatalf("reading ended before the sentinel (the SDK got %q)", got)
	return nil
}

// TestPipeHostileResponses: what an upstream sends while a direct call
// waits reaches that call only when it is that call's response (as the
// SDK reads it: an escaped id, a member it ignores); anything else goes
// to the SDK (which drops a response it did not ask for), and the
// connection goes on.
func TestPipeHostileResponses(t *testing.T) {
	const right = `{"content":[{"type":"text","text":"right"}]}`
	for _, c := range []struct {
		name, send string
		want       string // the call's raw result, or "error: " and what its error says
		sdk        []string
	}{
		{"unknown id", `{"jsonrpc":"2.0","id":"capkit-call-99","result":{"content":[]}}`, right, []string{"response capkit-call-99"}},
		{"a number for an id", `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`, right, []string{"response 1"}},
		{"a leading zero", `{"jsonrpc":"2.0","id":"capkit-call-01","result":{"content":[]}}`, right, []string{"response capkit-call-01"}},
		{"an escaped leading zero", `{"jsonrpc":"2.0","id":"capkit\u002dcall-01","result":{"content":[]}}`, right, []string{"response capkit-call-01"}},
		{"no number", `{"jsonrpc":"2.0","id":"capkit-call-","result":{"content":[]}}`, right, []string{"response capkit-call-"}},
		{"more than a number", `{"jsonrpc":"2.0","id":"capkit-call-1 ","result":{"content":[]}}`, right, []string{"response capkit-call-1 "}},
		{"past any number", `{"jsonrpc":"2.0","id":"capkit-call-184467440737095516161","result":{"content":[]}}`, right, []string{"response capkit-call-184467440737095516161"}},
		{"an id of another prefix", `{"jsonrpc":"2.0","id":"capkit-1","result":{"content":[]}}`, right, []string{"response capkit-1"}},
		{"an escaped id", `{"jsonrpc":"2.0","id":"capkit\u002dcall-1","result":{"content":[{"type":"text","text":"escaped"}]}}`,
			`{"content":[{"type":"text","text":"escaped"}]}`, nil},
		{"answered twice", `{"jsonrpc":"2.0","id":"capkit-call-1","result":{"content":[{"type":"text","text":"first"}]}}`,
			`{"content":[{"type":"text","text":"first"}]}`, nil},
		{"a member the SDK ignores", `{"jsonrpc":"2.0","id":"capkit-call-1","result":{"n":1},"extra":true}`, `{"n":1}`, nil},
		{"a null result", `{"jsonrpc":"2.0","id":"capkit-call-1","result":null}`, `null`, nil},
		{"both a result and an error", `{"jsonrpc":"2.0","id":"capkit-call-1","result":{},"error":{"code":-32000,"message":"both"}}`,
			"error: both", nil},
		{"neither a result nor an error", `{"jsonrpc":"2.0","id":"capkit-call-1"}`, "error: neither a result nor an error", nil},
		{"a request with the call's id", `{"jsonrpc":"2.0","id":"capkit-call-1","method":"ping"}`, right, []string{"ping"}},
		{"requests of the server", `{"jsonrpc":"2.0","id":7,"method":"roots/list"}` + "\n" + `{"jsonrpc":"2.0","id":8,"method":"sampling/createMessage","params":{}}`,
			right, []string{"roots/list", "sampling/createMessage"}},
		{"notifications naming the call", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"{\"id\":\"capkit-call-1\",\"result\":{}}"}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"capkit-call-1","progress":1}}`,
			right, []string{"notifications/message", "notifications/progress"}},
		{"blank lines", "\n \r\n\t", right, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPeer(t)
			msgs := p.reads()
			got := p.call(context.Background(), `{}`, "")
			p.next(t)
			p.send(t, c.send)
			p.send(t, `{"jsonrpc":"2.0","id":"capkit-call-1","result":`+right+`}`)
			p.send(t, sentinel)
			r := <-got
			if msg, ok := strings.CutPrefix(c.want, "error: "); ok {
				if r.err == nil || !strings.Contains(r.err.Error(), msg) {
					t.Errorf("got %s, %v; want an error saying %q", r.raw, r.err, msg)
				}
			} else if r.err != nil || string(r.raw) != c.want {
				t.Errorf("got %s, %v; want %s", r.raw, r.err, c.want)
			}
			wantSDK := c.sdk
			if c.want != right {
				wantSDK = append(wantSDK, "response capkit-call-1") // the right answer, now late
			}
			if s := sdkUntilSentinel(t, msgs); !slices.Equal(s, wantSDK) {
				t.Errorf("the SDK got %q, want %q", s, wantSDK)
			}
			// The connection goes on.
			next := p.call(context.Background(), `{}`, "")
			p.next(t)
			p.send(t, `{"jsonrpc":"2.0","id":"capkit-call-2","result":`+right+`}`)
			if r := <-next; r.err != nil || string(r.raw) != right {
				t.Errorf("the next call: %s, %v", r.raw, r.err)
			}
		})
	}
}

// TestPipeEndsOnViolation: a message that is not one of JSON-RPC's (as
// the SDK's own transport reads it), the upstream's output ending, at a
// line's end or in the middle of one: every call waiting fails with
// mcp.ErrConnectionClosed, reading ends, and later calls fail at once.
func TestPipeEndsOnViolation(t *testing.T) {
	for _, c := range []struct{ name, send string }{
		{"not JSON", `this is not JSON`},
		{"a batch", `[{"jsonrpc":"2.0","id":"capkit-call-1","result":{}}]`},
		{"another version", `{"jsonrpc":"1.0","id":"capkit-call-1","result":{}}`},
		{"a null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
		{"an object for an id", `{"jsonrpc":"2.0","id":{"a":1},"result":{}}`},
		{"output closed", ""},
		{"output closed mid-line", `{"jsonrpc":"2.0","id":"capkit-ca`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPeer(t)
			msgs := p.reads()
			var waiting []chan callOutcome
			for range 3 {
				waiting = append(waiting, p.call(context.Background(), `{}`, ""))
				p.next(t)
			}
			if c.send != "" {
				io.WriteString(p.toClient, c.send)
			}
			if strings.HasPrefix(c.name, "output closed") {
				p.toClient.Close()
			} else {
				io.WriteString(p.toClient, "\n")
			}
			for _, w := range waiting {
				if r := <-w; !errors.Is(r.err, mcp.ErrConnectionClosed) {
					t.Errorf("a waiting call: %s, %v", r.raw, r.err)
				}
			}
			for m := range msgs {
				t.Errorf("the SDK got %+v", m)
			}
			if _, err := p.c.call(context.Background(), "echo", nil, ""); !errors.Is(err, mcp.ErrConnectionClosed) {
				t.Errorf("a later call: %v", err)
			}
		})
	}
}

// TestPipeMessageAtTheBound: a response of limits.UpstreamMaxMessageBytes
// (and its newline) reaches its call; one byte more ends the connection
// (TestPipeEnds).
func TestPipeMessageAtTheBound(t *testing.T) {
	p := newPeer(t)
	p.reads()
	got := p.call(context.Background(), `{}`, "")
	p.next(t)
	head, tail := `{"jsonrpc":"2.0","id":"capkit-call-1","result":{"content":[{"type":"text","text":"`, `"}]}}`
	text := strings.Repeat("a", limits.UpstreamMaxMessageBytes-len(head)-len(tail))
	go io.WriteString(p.toClient, head+text+tail+"\n")
	r := <-got
	if r.err != nil || len(r.raw) != len(`{"content":[{"type":"text","text":"`)+len(text)+len(`"}]}`) {
		t.Fatalf("got %d bytes, %v", len(r.raw), r.err)
	}
	if p.c.over.Load() {
		t.Error("marked as past the bound")
	}
}

// TestPipeDeafUpstream: a call whose request an upstream does not read
// gives up at its deadline, and so do one waiting for its turn to write
// (nothing of it is written) and a message of the SDK's; the request cut
// short is written whole before anything else, so that the upstream,
// once it reads, gets whole messages and answers the next call.
func TestPipeDeafUpstream(t *testing.T) {
	p := newPeer(t)
	p.reads()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	big := `{"text":"` + strings.Repeat("a", limits.MiB) + `"}`
	if r := <-p.call(ctx, big, ""); !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("the first call: %v", r.err)
	}
	if !pipeFull(t, p.toServer) {
		t.Skip("the first call's second passed before its request was written; the machine is too slow")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if r := <-p.call(ctx, `{"text":"second"}`, ""); !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("the second call: %v", r.err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	sdk := make(chan error, 1)
	go func() { sdk <- p.c.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized"}) }()
	cancel()
	if err := <-sdk; !errors.Is(err, context.Canceled) {
		t.Fatalf("the SDK's write: %v", err)
	}
	third := p.call(context.Background(), `{"text":"third"}`, "")
	for {
		l := p.next(t)
		var m struct {
			ID     string `json:"id"`
			Method string `json:"method"`
			Params struct {
				RequestID string `json:"requestId"`
				Arguments struct{ Text string }
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a line that is not a whole message (%d bytes): %v", len(l), err)
		}
		switch {
		case m.ID == "capkit-call-1" && len(m.Params.Arguments.Text) == limits.MiB:
		case m.Method == "notifications/cancelled" && m.Params.RequestID == "capkit-call-1":
		case m.Params.Arguments.Text == "third":
			p.send(t, `{"jsonrpc":"2.0","id":"`+m.ID+`","result":{"n":3}}`)
			if r := <-third; r.err != nil || string(r.raw) != `{"n":3}` {
				t.Fatalf("the third call: %s, %v", r.raw, r.err)
			}
			return
		default:
			t.Fatalf("written: %.200s", l)
		}
	}
}

// pipeFull reports whether the pipe r reads holds all it can.
func pipeFull(t *testing.T, r *os.File) bool {
	t.Helper()
	sc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var held, size int
	sc.Control(func(fd uintptr) {
		if held, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil { // FIONREAD
			size, err = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return held == size
}

// TestPipeCloseUnblocks: closing the connection ends a write an
// upstream does not read and every wait for a turn to write, whatever
// their contexts.
func TestPipeCloseUnblocks(t *testing.T) {
	p := newPeer(t)
	p.reads()
	big := `{"text":"` + strings.Repeat("a", limits.MiB) + `"}`
	first := p.call(context.Background(), big, "")
	eventually(t, "the pipe full", func() bool { return pipeFull(t, p.toServer) })
	sdk := make(chan error, 1)
	go func() { sdk <- p.c.Write(context.Background(), &jsonrpc.Request{Method: "notifications/initialized"}) }()
	p.c.Close()
	if r := <-first; !errors.Is(r.err, mcp.ErrConnectionClosed) {
		t.Errorf("the call: %v", r.err)
	}
	if err := <-sdk; err == nil {
		t.Error("the SDK's write succeeded after the close")
	}
}

// TestPipeConcurrentCalls: many callers at once, answered out of order,
// among stale answers and notifications, while the SDK writes too: each
// gets its own answer, and every line written is a whole message.
func TestPipeConcurrentCalls(t *testing.T) {
	p := newPeer(t)
	msgs := p.reads()
	go func() {
		for range msgs {
		}
	}()
	const callers, each = 8, 50
	p.hear()
	answered := make(chan error, 1)
	go func() { answered <- answerReversed(p, callers*each) }()
	sdkDone := make(chan error, 1)
	go func() {
		for range 2000 {
			if err := p.c.Write(context.Background(), &jsonrpc.Request{Method: "notifications/roots/list_changed"}); err != nil {
				sdkDone <- err
				return
			}
		}
		sdkDone <- nil
	}()
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			for j := range each {
				tok := fmt.Sprintf("c%d-%d", i, j)
				raw, err := p.c.call(context.Background(), "echo", json.RawMessage(`{"text":"`+tok+`"}`), "")
				if err != nil || string(raw) != `{"content":[{"type":"text","text":"`+tok+`"}]}` {
					t.Errorf("%s: got %s, %v", tok, raw, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := <-sdkDone; err != nil {
		t.Fatal(err)
	}
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
}

// answerReversed answers n calls: the requests read at once in reverse
// order, each answer after a progress notification and a stale answer
// (the one before, again).
func answerReversed(p *peer, n int) error {
	stale := `{"jsonrpc":"2.0","id":"capkit-call-0","result":{}}`
	for n > 0 {
		batch := []string{<-p.lines}
	more:
		for {
			select {
			case l := <-p.lines:
				batch = append(batch, l)
			default:
				break more
			}
		}
		for _, l := range slices.Backward(batch) {
			var m struct {
				ID     *string `json:"id"`
				Method string  `json:"method"`
				Params struct {
					Arguments json.RawMessage `json:"arguments"`
				} `json:"params"`
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				return fmt.Errorf("a line that is not a whole message: %q", l)
			}
			if m.ID == nil {
				continue
			}
			var args struct{ Text string }
			json.Unmarshal(m.Params.Arguments, &args)
			answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"content":[{"type":"text","text":%q}]}}`, *m.ID, args.Text)
			msg := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}}` + "\n" + stale + "\n" + answer + "\n"
			if _, err := io.WriteString(p.toClient, msg); err != nil {
				return err
			}
			stale = answer
			n--
		}
	}
	return nil
}

// TestOneLine: a call's arguments go on one line, compacted only when
// they hold a line break; none are {}; what is not JSON is refused,
// never sent as something else.
func TestOneLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "{}"},
		{" \n", "{}"},
		{`{"a":"b c"}`, `{"a":"b c"}`},
		{"{\r\n \"a\": [1,\n 2]\n}", `{"a":[1,2]}`},
		{"{\"a\":\n", "error"},
	} {
		got, err := oneLine(json.RawMessage(c.in))
		if c.want == "error" {
			if fault.CodeOf(err) != fault.InvalidInput {
				t.Errorf("%q: %s, %v; want invalid_input", c.in, got, err)
			}
		} else if err != nil || string(got) != c.want {
			t.Errorf("%q: %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}
