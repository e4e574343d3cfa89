package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// pipeConn is the client side of a stdio upstream: newline-delimited
// JSON-RPC on the process's standard output and input. The SDK's client
// session runs over it (initialize, listings, notifications, pings), and
// tools/call is made on it directly (call): the request written here, its
// response taken off the input by the SDK's own reading goroutine and
// handed straight to the caller.
//
// Why not the SDK's IOTransport and ClientSession.CallTool: for a small
// call, most of capkit's CPU on the gateway's path went to them: the SDK
// decodes each message with a decoder that allocates a 32 KiB buffer
// (the garbage collector ran every few dozen calls), on a goroutine of
// its own that hands each message to the session's reading goroutine,
// which hands the response to the caller, which decodes the result again
// into typed content that capkit then encodes once more
// (bench/RESULTS.md, "Gateway"). A response to a direct call crosses one
// goroutine here, and a result of one text block is read in one pass; any
// other result is decoded by the SDK as before (TestPlainResultMatchesSDK).
//
// Writers take turns, one whole line each; one waiting for its turn
// gives up when its context ends, one writing to an upstream that reads
// none of its input at its deadline (TestPipeDeafUpstream). Responses reach their calls as
// they are read, before the SDK's handlers see the notifications read
// ahead of them (as with its CallTool): a call's last progress reports
// may come after its result, and are then dropped.
type pipeConn struct {
	in     *bufio.Reader
	closer io.Closer // the input's
	out    io.WriteCloser
	dl     deadliner    // out, when it has write deadlines; nil otherwise
	over   *atomic.Bool // set when a message passed limits.UpstreamMaxMessageBytes

	// turn holds a token while a line is written; wbuf and wdl (out's
	// write deadline) are its holder's.
	turn chan struct{}
	wbuf []byte
	wdl  time.Time
	shut chan struct{} // closed by Close: no turn comes any more

	mu     sync.Mutex
	calls  map[uint64]chan reply // direct calls awaiting their response, by id's number
	seq    uint64
	ended  error // why reading ended; set once, with calls emptied
	closed sync.Once
}

// reply is a direct call's response: its result or its error.
type reply struct {
	result []byte
	err    error
}

// directIDPrefix starts the ids of direct calls, then their number in
// decimal: strings, where the SDK's own requests have numbers, so the two
// never meet.
const directIDPrefix = "capkit-call-"

// directNumber is the number of the direct call id names, or false when
// it names none: exactly the prefix, then decimal digits with no leading
// zero (another spelling is another id, as the SDK compares them).
func directNumber[T string | []byte](id T) (uint64, bool) {
	if len(id) <= len(directIDPrefix) || string(id[:len(directIDPrefix)]) != directIDPrefix || id[len(directIDPrefix)] == '0' {
		return 0, false
	}
	var n uint64
	for _, d := range []byte(id[len(directIDPrefix):]) {
		if d < '0' || d > '9' || n > (math.MaxUint64-9)/10 {
			return 0, false
		}
		n = n*10 + uint64(d-'0')
	}
	return n, true
}

// deadliner is an output whose writes can be cut short (an *os.File pipe).
type deadliner interface{ SetWriteDeadline(time.Time) error }

func newPipeConn(in io.ReadCloser, out io.WriteCloser, over *atomic.Bool) *pipeConn {
	dl, _ := out.(deadliner)
	return &pipeConn{
		in:     bufio.NewReaderSize(in, 64*limits.KiB),
		closer: in,
		out:    out,
		dl:     dl,
		over:   over,
		turn:   make(chan struct{}, 1),
		shut:   make(chan struct{}),
		calls:  map[uint64]chan reply{},
	}
}

// pipeTransport hands the connection to the SDK's client.
type pipeTransport struct{ c *pipeConn }

func (t pipeTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// errConnEnded fails the direct calls in flight when the upstream's
// output ends or the connection closes.
var errConnEnded = fmt.Errorf("%w: the upstream's connection ended", mcp.ErrConnectionClosed)

// Read returns the next message that is not a direct call's response;
// those it hands to their callers. It ends the connection (as the SDK's
// transport does) at a message past limits.UpstreamMaxMessageBytes, a
// batch (none in the protocol capkit speaks) or one that is not JSON-RPC.
func (c *pipeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if err := ctx.Err(); err != nil {
			c.end(err)
			return nil, err
		}
		line, err := c.readLine()
		if err != nil {
			c.end(err)
			return nil, err
		}
		data := bytes.TrimSpace(line)
		switch {
		case len(data) == 0:
			continue
		case data[0] == '[':
			err := errors.New("the upstream sent a JSON-RPC batch, which protocol " + protocolVersion + " does not have")
			c.end(err)
			return nil, err
		}
		if c.takeReply(data) {
			continue
		}
		msg, err := jsonrpc.DecodeMessage(bytes.Clone(data))
		if err != nil {
			c.end(err)
			return nil, err
		}
		if r, ok := msg.(*jsonrpc.Response); ok && c.deliverTo(r.ID, reply{r.Result, r.Error}) {
			continue // a direct call's response the fast reading refused
		}
		return msg, nil
	}
}

// readLine reads one line, failing once it passes
// limits.UpstreamMaxMessageBytes, before more of it is buffered.
func (c *pipeConn) readLine() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := c.in.ReadSlice('\n')
		if len(buf)+len(chunk) > limits.UpstreamMaxMessageBytes+1 {
			c.over.Store(true)
			return nil, errTooBig
		}
		switch {
		case err == bufio.ErrBufferFull:
			buf = append(buf, chunk...)
			continue
		case err == io.EOF && len(buf)+len(chunk) > 0:
			// A last message without a newline is still one.
		case err != nil:
			return nil, err
		}
		if buf == nil {
			return chunk, nil // valid until the next read
		}
		return append(buf, chunk...), nil
	}
}

// responseWire is a response as the fast reading takes it: only what a
// response may hold, each member once, valid UTF-8 (encoding/json/v2's
// defaults and RejectUnknownMembers); anything else is left to the SDK.
type responseWire struct {
	Version string         `json:"jsonrpc"`
	ID      wireID         `json:"id"`
	Result  jsontext.Value `json:"result"`
	Error   *jsonrpc.Error `json:"error"`
}

// wireID is a direct call's id as the fast reading takes it: written
// without escapes (else the SDK's reading decides); 0 for none.
type wireID uint64

var errNotDirect = errors.New("not a direct call's id")

func (w *wireID) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return errNotDirect
	}
	n, ok := directNumber([]byte(v[1 : len(v)-1]))
	if !ok {
		return errNotDirect
	}
	*w = wireID(n)
	return nil
}

// takeReply hands data to the direct call it answers, reporting whether
// it was one.
func (c *pipeConn) takeReply(data []byte) bool {
	if !bytes.Contains(data, []byte(directIDPrefix)) {
		return false
	}
	var w responseWire
	if jsonv2.Unmarshal(data, &w, jsonv2.RejectUnknownMembers(true)) != nil || w.Version != "2.0" || w.ID == 0 || (w.Result == nil) == (w.Error == nil) {
		return false
	}
	r := reply{result: w.Result} // a copy: Value's UnmarshalJSON copies
	if w.Error != nil {
		r = reply{err: w.Error}
	}
	return c.deliver(uint64(w.ID), r)
}

// deliverTo hands r to the direct call id names, reporting whether one
// awaited it.
func (c *pipeConn) deliverTo(id jsonrpc.ID, r reply) bool {
	s, ok := id.Raw().(string)
	if !ok {
		return false
	}
	n, ok := directNumber(s)
	return ok && c.deliver(n, r)
}

// deliver hands r to direct call n, reporting whether it awaited it.
func (c *pipeConn) deliver(n uint64, r reply) bool {
	c.mu.Lock()
	ch := c.calls[n]
	delete(c.calls, n)
	c.mu.Unlock()
	if ch == nil {
		return false
	}
	if r.err == nil && r.result == nil {
		r.err = errors.New("the response has neither a result nor an error")
	}
	ch <- r // buffered: the caller may have gone
	return true
}

// end records why reading ended and fails the direct calls in flight.
func (c *pipeConn) end(why error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended != nil {
		return
	}
	c.ended = fmt.Errorf("%w (%v)", errConnEnded, why)
	for id, ch := range c.calls {
		ch <- reply{err: c.ended}
		delete(c.calls, id)
	}
}

// call makes a tools/call and returns its raw result, or the upstream's
// JSON-RPC error (a *jsonrpc.Error), or why there is none: the
// connection ended (mcp.ErrConnectionClosed), or ctx did (ctx.Err(); the
// upstream is told with notifications/cancelled when the request had its
// turn to be written). progressToken, when not "", is the request's.
func (c *pipeConn) call(ctx context.Context, name string, args json.RawMessage, progressToken string) (json.RawMessage, error) {
	args, err := oneLine(args)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.ended != nil {
		err := c.ended
		c.mu.Unlock()
		return nil, err
	}
	c.seq++
	id := c.seq
	c.calls[id] = ch
	c.mu.Unlock()
	if err := c.takeTurn(ctx); err != nil {
		c.forget(id) // nothing of it was written
		return nil, err
	}
	if err := c.writeCall(ctx, id, name, args, progressToken); err != nil && ctx.Err() == nil {
		c.forget(id)
		c.Close()
		return nil, fmt.Errorf("%w (%v)", errConnEnded, err)
	}
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		if c.forget(id) {
			// The write may wait on a full pipe: not on the caller's path.
			go c.writeCancelled(id, ctx.Err())
		}
		return nil, ctx.Err()
	}
}

// forget stops awaiting id's response, reporting whether it still was.
func (c *pipeConn) forget(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.calls[id]
	delete(c.calls, id)
	return ok
}

// writeCall writes a tools/call request in the turn taken: what the SDK
// writes for CallToolParams, with the id a string.
func (c *pipeConn) writeCall(ctx context.Context, id uint64, name string, args json.RawMessage, progressToken string) error {
	b := append(c.wbuf[:0], `{"jsonrpc":"2.0","id":`...)
	b = appendID(b, id)
	b = append(b, `,"method":"tools/call","params":{`...)
	if progressToken != "" {
		b = append(b, `"_meta":{"progressToken":`...)
		b, _ = jsontext.AppendQuote(b, progressToken)
		b = append(b, "},"...)
	}
	b = append(b, `"name":`...)
	b, _ = jsontext.AppendQuote(b, name)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	b = append(b, "}}\n"...)
	c.wbuf = b
	if cap(b) > 64*limits.KiB {
		c.wbuf = nil // a large call's buffer is not kept
	}
	return c.writeTurn(ctx, b)
}

// appendID appends direct call id's id, quoted.
func appendID(b []byte, id uint64) []byte {
	b = append(b, `"`+directIDPrefix...)
	b = strconv.AppendUint(b, id, 10)
	return append(b, '"')
}

// oneLine is a call's arguments on one line: a JSON value (the kernel
// validated it) with no line break outside its strings, {} for none.
func oneLine(args json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		return json.RawMessage("{}"), nil
	}
	if bytes.IndexByte(args, '\n') < 0 && bytes.IndexByte(args, '\r') < 0 {
		return args, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, args); err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "the arguments are not JSON")
	}
	return buf.Bytes(), nil
}

// writeCancelled tells the upstream a direct call's caller has gone, if
// its turn to write comes within limits.UpstreamNoticeWait.
func (c *pipeConn) writeCancelled(id uint64, why error) {
	ctx, cancel := context.WithTimeout(context.Background(), limits.UpstreamNoticeWait)
	defer cancel()
	b := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`)
	b = appendID(b, id)
	b = append(b, `,"reason":`...)
	b, _ = jsontext.AppendQuote(b, why.Error())
	b = append(b, "}}\n"...)
	if c.takeTurn(ctx) == nil {
		c.writeTurn(ctx, b)
	}
}

// takeTurn waits for the turn to write, within ctx.
func (c *pipeConn) takeTurn(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case c.turn <- struct{}{}:
		return nil
	default:
	}
	select {
	case c.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.shut:
		return errConnEnded
	}
}

// writeTurn writes line, one whole message, in the turn taken, and
// passes the turn on. A write an upstream does not read is cut at ctx's
// deadline (when out has write deadlines): writeTurn then returns
// ctx.Err() and the rest of the line is written in the background before
// the turn passes on, as half a line would garble the next message.
func (c *pipeConn) writeTurn(ctx context.Context, line []byte) error {
	if c.dl != nil {
		c.setDeadline(ctx)
	}
	n, err := c.out.Write(line)
	if n < len(line) && errors.Is(err, os.ErrDeadlineExceeded) {
		go func() {
			c.setDeadline(context.Background())
			c.out.Write(line[n:]) // fails once the connection is closed
			<-c.turn
		}()
		<-ctx.Done() // its deadline has passed
		return ctx.Err()
	}
	<-c.turn
	return err
}

// setDeadline gives the turn's writes ctx's deadline, or none.
func (c *pipeConn) setDeadline(ctx context.Context) {
	if d, _ := ctx.Deadline(); !d.Equal(c.wdl) {
		c.dl.SetWriteDeadline(d)
		c.wdl = d
	}
}

// Write writes one of the SDK's messages.
func (c *pipeConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %v", err)
	}
	if err := c.takeTurn(ctx); err != nil {
		return err
	}
	return c.writeTurn(ctx, append(data, '\n'))
}

// Close closes both pipes (which ends a Read waiting on the input) and
// fails the direct calls in flight.
func (c *pipeConn) Close() error {
	c.closed.Do(func() {
		close(c.shut)
		c.out.Close()
		c.closer.Close()
		c.end(io.ErrClosedPipe)
	})
	return nil
}

// SessionID is empty: stdio has one session per connection.
func (c *pipeConn) SessionID() string { return "" }

var _ mcp.Connection = (*pipeConn)(nil)
