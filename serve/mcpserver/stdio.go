package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// ServeStdio serves one MCP session over newline-delimited JSON-RPC: it
// reads requests from in and writes responses to out, until in ends, the
// client closes the session, or ctx ends. It returns nil when the client
// ended the session and ctx.Err() when ctx did. If in is an io.Closer it is
// closed on return, which unblocks the read pending on it; when in and out
// are pipes (os.Stdin and os.Stdout of a server started by its client),
// ServeStdio uses and closes duplicates of them instead, and leaves the
// originals open and as blocking as they were.
//
// Each line is one message of at most limits.MCPMaxMessageBytes. A line
// that is not valid JSON (including invalid UTF-8 and duplicate member
// names) gets a parse error, a batch or a line too long an invalid-request
// error, and reading goes on: a malformed line never ends the session.
// When the input ends, the answers still owed are written before the
// session ends (bounded by limits.MCPDrainTimeout).
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ks, err := s.startSession(ctx, s.newSession)
	if err != nil {
		if c, ok := in.(io.Closer); ok {
			c.Close()
		}
		return err
	}
	// Pipes and sockets are served through the runtime's poller (see
	// pollable), on duplicates that are closed on return; the originals are
	// put back as they were.
	if f, ok := in.(*os.File); ok {
		if pf, restore := pollable(f); pf != nil {
			defer restore()
			in = pf
		}
	}
	if f, ok := out.(*os.File); ok {
		growOutput(f)
		if pf, restore := pollable(f); pf != nil {
			defer restore()
			defer pf.Close()
			out = pf
		}
	}
	return s.serveConn(ctx, ks, newStdioConn(in, out, s.log, !s.opts.disableFastPath, 0))
}

func (s *Server) serveConn(ctx context.Context, ks *kernel.Session, c *stdioConn) error {
	b := s.bind(ks, c.fast)
	if !s.opts.disableDirect {
		c.direct = newDirectCalls(ctx, b)
	}
	ss, err := b.ms.Connect(ctx, transport{c}, nil)
	if err != nil {
		c.Close()
		return err
	}
	done := make(chan struct{})
	go func() {
		ss.Wait()
		if c.direct != nil {
			c.direct.stop()
		}
		ks.Close()
		close(done)
	}()
	select {
	case <-done:
		c.Close()
		return nil
	case <-ctx.Done():
		ss.Close()
		<-done
		return ctx.Err()
	}
}

// transport hands an existing connection to the SDK.
type transport struct{ c mcp.Connection }

func (t transport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// stdioConn is the server side of the stdio transport (see the package
// comment for why it is ours). Messages are JSON-RPC as the SDK encodes
// and decodes them; only the framing and the fast path are done here.
type stdioConn struct {
	in        *bufio.Reader
	lines     chan line // from readLoop, unless reads are direct
	closed    chan struct{}
	closeOnce sync.Once
	closeIn   func()
	log       *slog.Logger
	max       int

	wmu  sync.Mutex
	out  io.Writer
	buf  []byte // pending output: at most flushBytes plus one escaped chunk
	werr error
	fast *fastPath

	direct *directCalls // set before the SDK connects; nil when disabled

	// pending are the requests handed to the SDK that await a response.
	// When the input ends, Read waits for them (and the direct calls in
	// flight) before reporting the end, so a client that sends its
	// requests and closes its side still gets every answer.
	pmu     sync.Mutex
	pending map[jsonrpc.ID]bool
	settled chan struct{} // closed and replaced whenever pending empties
}

// track records a request handed to the SDK.
func (c *stdioConn) track(id jsonrpc.ID) {
	c.pmu.Lock()
	c.pending[id] = true
	c.pmu.Unlock()
}

// untrack records that a request was answered, or cancelled (the client
// expects no answer then).
func (c *stdioConn) untrack(id jsonrpc.ID) {
	c.pmu.Lock()
	if c.pending[id] {
		delete(c.pending, id)
		if len(c.pending) == 0 {
			close(c.settled)
			c.settled = make(chan struct{})
		}
	}
	c.pmu.Unlock()
}

// drain waits until every request read so far has been answered, each is
// bounded by its tool's deadline, or until ctx ends, the connection
// closes or limits.MCPDrainTimeout passes.
func (c *stdioConn) drain(ctx context.Context) {
	timer := time.NewTimer(limits.MCPDrainTimeout)
	defer timer.Stop()
	for {
		c.pmu.Lock()
		n, settled := len(c.pending), c.settled
		c.pmu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-settled:
		case <-ctx.Done():
			return
		case <-c.closed:
			return
		case <-timer.C:
			return
		}
	}
	if c.direct != nil {
		done := make(chan struct{})
		go func() { c.direct.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
		case <-c.closed:
		case <-timer.C:
		}
	}
}

// line is one framed input line, or why there is none.
type line struct {
	data    []byte
	tooLong bool
	err     error
}

// flushBytes is the output buffer: a message goes out in one write, a large
// one in writes of about this size.
const flushBytes = 256 * limits.KiB

// escapeChunkBytes is how much text is escaped at a time into the output
// buffer (at most six times as many bytes once escaped).
const escapeChunkBytes = 32 * limits.KiB

// newStdioConn frames messages of at most max bytes (0 means
// limits.MCPMaxMessageBytes).
func newStdioConn(in io.Reader, out io.Writer, log *slog.Logger, fast bool, max int) *stdioConn {
	if max <= 0 {
		max = limits.MCPMaxMessageBytes
	}
	c := &stdioConn{
		in:      bufio.NewReaderSize(in, 64*limits.KiB),
		closed:  make(chan struct{}),
		closeIn: func() {},
		log:     log,
		max:     max,
		out:     out,
		pending: map[jsonrpc.ID]bool{},
		settled: make(chan struct{}),
	}
	if fast {
		c.fast = newFastPath()
	}
	if cl, ok := in.(io.Closer); ok {
		c.closeIn = func() { cl.Close() }
	}
	if !interruptible(in) {
		// Reading runs on its own goroutine so that Close unblocks Read
		// even when in (a terminal, a blocking os.Stdin) cannot be
		// interrupted.
		c.lines = make(chan line)
		go c.readLoop()
	}
	return c
}

// interruptible reports whether closing r interrupts a Read pending on it.
func interruptible(r io.Reader) bool {
	switch r := r.(type) {
	case *io.PipeReader, net.Conn:
		return true
	case *os.File:
		// Only files on the runtime's poller (pollable made stdin one)
		// accept deadlines.
		return r.SetReadDeadline(time.Time{}) == nil
	}
	return false
}

func (c *stdioConn) readLoop() {
	for {
		l := c.readLine()
		select {
		case c.lines <- l:
		case <-c.closed:
			return
		}
		if l.err != nil {
			return
		}
	}
}

// readLine reads up to the next newline. A line whose content (without
// "\n" or "\r\n") is longer than c.max is consumed without being kept and
// reported as too long.
func (c *stdioConn) readLine() line {
	r := c.in
	var buf []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > c.max+2 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && (err != io.EOF || len(buf) == 0 && !tooLong) {
			return line{err: err}
		}
		// A last line without a newline is still a message.
		content := len(buf)
		if content > 0 && buf[content-1] == '\n' {
			content--
			if content > 0 && buf[content-1] == '\r' {
				content--
			}
		}
		return line{data: buf, tooLong: tooLong || content > c.max}
	}
}

// Read returns the next well-formed message. Malformed lines are answered
// here and skipped.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var l line
		if c.lines == nil {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if l = c.readLine(); l.err != nil {
				select {
				case <-c.closed:
					return nil, io.EOF
				default:
					c.drain(ctx)
					return nil, l.err
				}
			}
		} else {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-c.closed:
				return nil, io.EOF
			case l = <-c.lines:
			}
			if l.err != nil {
				c.drain(ctx)
				return nil, l.err
			}
		}
		if l.tooLong {
			c.reject(jsonrpc.CodeInvalidRequest, fmt.Sprintf("message exceeds %d bytes", c.max))
			continue
		}
		data := bytes.TrimSpace(l.data)
		switch {
		case len(data) == 0:
			continue
		case data[0] == '[':
			c.reject(jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported")
			continue
		}
		var w wireMessage
		if err := jsonv2.Unmarshal(data, &w); err != nil {
			var se *jsonv2.SemanticError
			if errors.As(err, &se) {
				c.reject(jsonrpc.CodeInvalidRequest, "invalid JSON-RPC message")
			} else {
				c.reject(jsonrpc.CodeParseError, "parse error: not one valid JSON value (UTF-8, unique member names)")
			}
			continue
		}
		msg, err := w.message()
		if err != nil {
			c.reject(jsonrpc.CodeInvalidRequest, "invalid JSON-RPC message: "+err.Error())
			continue
		}
		if req, ok := msg.(*jsonrpc.Request); ok && c.direct != nil {
			switch req.Method {
			case "tools/call":
				if req.IsCall() && c.direct.take(c, req) {
					continue
				}
			case "notifications/cancelled":
				c.direct.cancelled(req.Params)
			case "notifications/roots/list_changed":
				// Now, not when the SDK gets to it: the next call must not
				// take the direct path with the roots of before.
				c.direct.b.roots.changed()
			}
		}
		if req, ok := msg.(*jsonrpc.Request); ok {
			switch {
			case req.IsCall():
				c.track(req.ID)
				if req.Method == "tools/call" {
					req.Extra = stdioExtra(req.ID)
				}
			case req.Method == "notifications/cancelled":
				if id, ok := cancelledID(req.Params); ok {
					c.untrack(id)
				}
			}
		}
		return msg, nil
	}
}

// wireMessage is a JSON-RPC message as read. Decoding it is what
// jsonrpc.DecodeMessage does (same fields, same rules), without the SDK's
// decoder, which allocates a 32 KiB buffer per call and runs twice per
// message; strictness (valid UTF-8, unique names, no trailing data) comes
// from encoding/json/v2's defaults.
type wireMessage struct {
	Version string         `json:"jsonrpc"`
	ID      jsontext.Value `json:"id"`
	Method  *string        `json:"method"`
	Params  jsontext.Value `json:"params"`
	Result  jsontext.Value `json:"result"`
	Error   *jsonrpc.Error `json:"error"`
}

func (w *wireMessage) message() (jsonrpc.Message, error) {
	if w.Version != "2.0" {
		return nil, errors.New(`"jsonrpc" must be "2.0"`)
	}
	id, err := parseID(w.ID)
	if err != nil {
		return nil, err
	}
	if w.Method != nil {
		return &jsonrpc.Request{ID: id, Method: *w.Method, Params: json.RawMessage(w.Params)}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("a message needs a method or an id")
	}
	r := &jsonrpc.Response{ID: id, Result: json.RawMessage(w.Result)}
	if w.Error != nil {
		r.Error = w.Error
	}
	return r, nil
}

// reject answers a message that could not be read. Its id is unknown, so
// the response's is null, as JSON-RPC prescribes.
func (c *stdioConn) reject(code int64, msg string) {
	c.log.Warn("mcp: malformed message", slog.Int64("code", code), slog.String("error", msg))
	data := nullIDError(code, msg)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.put(data)
	c.buf = append(c.buf, '\n')
	c.flush()
}

// Write writes one message and flushes it. A tool result carrying a fast
// path placeholder is written with the stashed content in its place.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if resp, ok := msg.(*jsonrpc.Response); ok && c.fast != nil && resp.Error == nil {
		if res, before, after, ok := c.fast.take(resp.Result); ok {
			c.writeResult(resp.ID, res, before, after)
			err := c.flush()
			res.Release()
			c.untrack(resp.ID)
			return err
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	c.put(data)
	c.buf = append(c.buf, '\n')
	err = c.flush()
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.untrack(resp.ID)
	}
	return err
}

// put adds p to the pending output; a piece larger than flushBytes is
// written directly rather than copied.
func (c *stdioConn) put(p []byte) {
	if len(c.buf)+len(p) > flushBytes {
		c.flush()
		if len(p) > flushBytes {
			if c.werr == nil {
				_, c.werr = c.out.Write(p)
			}
			return
		}
	}
	c.buf = append(c.buf, p...)
}

// flush writes the pending output. A write error sticks: every later write
// reports it, and the SDK closes the connection.
func (c *stdioConn) flush() error {
	if c.werr == nil && len(c.buf) > 0 {
		_, c.werr = c.out.Write(c.buf)
	}
	c.buf = c.buf[:0]
	return c.werr
}

// writeResult writes a tools/call response: the SDK's encoding of the
// placeholder result (before, after) around the real content.
func (c *stdioConn) writeResult(id jsonrpc.ID, res *kernel.Result, before, after []byte) {
	c.buf = append(c.buf, `{"jsonrpc":"2.0","id":`...)
	c.buf = appendID(c.buf, id)
	c.buf = append(c.buf, `,"result":`...)
	c.put(before)
	c.buf = append(c.buf, `"content":[{"type":"text","text":"`...)
	c.writeEscaped(res.Text)
	c.buf = append(c.buf, `"}]`...)
	if len(res.Structured) > 0 {
		c.buf = append(c.buf, `,"structuredContent":`...)
		c.put(res.Structured)
	}
	c.put(after)
	c.buf = append(c.buf, "}\n"...)
}

// writeDirect writes the response to a call the direct path ran: what the
// SDK writes for the same outcome.
func (c *stdioConn) writeDirect(id jsonrpc.ID, res *kernel.Result, failed *mcp.CallToolResult, perr error) {
	if res != nil {
		// Written (or not) with the connection: its text is not used after.
		defer res.Release()
	}
	select {
	case <-c.closed:
		return
	default:
	}
	if res != nil && (res.Image != nil || res.Content != nil) {
		res, failed = nil, c.direct.b.blockResult(res)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if res != nil {
		c.writeResult(id, res, []byte("{"), []byte("}"))
		c.flush()
		return
	}
	resp := &jsonrpc.Response{ID: id, Error: perr}
	if perr == nil {
		data, err := marshalResult(failed)
		if err != nil {
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the result failed"}
		}
		resp.Result = data
	}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		return
	}
	c.put(data)
	c.buf = append(c.buf, '\n')
	c.flush()
}

// marshalResult encodes a result as the SDK does: encoding/json without
// HTML escaping.
func marshalResult(r *mcp.CallToolResult) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// writeEscaped writes s as the inside of a JSON string, escaping it a
// chunk at a time straight into the output buffer. Chunks end on UTF-8
// sequence starts, so each valid sequence is escaped whole and the result
// is what escaping s at once gives.
func (c *stdioConn) writeEscaped(s string) {
	for len(s) > 0 {
		n := min(len(s), escapeChunkBytes)
		for n < len(s) && n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		if n == 0 {
			n = min(len(s), escapeChunkBytes)
		}
		c.buf = appendEscaped(c.buf, s[:n])
		if len(c.buf) >= flushBytes {
			c.flush()
		}
		s = s[n:]
	}
}

// appendID appends a JSON-RPC id as JSON.
func appendID(dst []byte, id jsonrpc.ID) []byte {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.AppendInt(dst, v, 10)
	case string:
		dst, _ = jsontext.AppendQuote(dst, v)
		return dst
	}
	return append(dst, "null"...)
}

// Close ends the connection; it unblocks Read and closes the input if it
// can be closed.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeIn()
	})
	return nil
}

// SessionID is empty: stdio has one session per connection.
func (c *stdioConn) SessionID() string { return "" }

var _ mcp.Connection = (*stdioConn)(nil)
