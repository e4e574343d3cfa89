package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"unicode/utf8"

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
// closed on return, which unblocks the goroutine reading it.
//
// Each line is one message of at most limits.MCPMaxMessageBytes. A line
// that is not valid JSON (including invalid UTF-8 and duplicate member
// names) gets a parse error, a batch or a line too long an invalid-request
// error, and reading goes on: a malformed line never ends the session.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ks, err := s.startSession(ctx)
	if err != nil {
		if c, ok := in.(io.Closer); ok {
			c.Close()
		}
		return err
	}
	return s.serveConn(ctx, ks, newStdioConn(in, out, s.log, !s.opts.disableFastPath))
}

func (s *Server) serveConn(ctx context.Context, ks *kernel.Session, c *stdioConn) error {
	b := s.bind(ks, c.fast)
	ss, err := b.ms.Connect(ctx, transport{c}, nil)
	if err != nil {
		c.Close()
		return err
	}
	done := make(chan struct{})
	go func() {
		ss.Wait()
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
	lines     chan line
	closed    chan struct{}
	closeOnce sync.Once
	closeIn   func()
	log       *slog.Logger
	max       int

	wmu     sync.Mutex
	w       *bufio.Writer
	scratch []byte
	fast    *fastPath
}

// line is one framed input line, or why there is none.
type line struct {
	data    []byte
	tooLong bool
	err     error
}

// writeBufferBytes is the output buffer: small results go out in one write,
// large ones in writes of this size.
const writeBufferBytes = 64 * limits.KiB

// quoteChunkBytes is how much text is quoted at a time into scratch.
const quoteChunkBytes = 32 * limits.KiB

func newStdioConn(in io.Reader, out io.Writer, log *slog.Logger, fast bool) *stdioConn {
	c := &stdioConn{
		lines:   make(chan line),
		closed:  make(chan struct{}),
		closeIn: func() {},
		log:     log,
		max:     limits.MCPMaxMessageBytes,
		w:       bufio.NewWriterSize(out, writeBufferBytes),
	}
	if fast {
		c.fast = newFastPath()
	}
	if cl, ok := in.(io.Closer); ok {
		c.closeIn = func() { cl.Close() }
	}
	// Reading runs on its own goroutine so that Close unblocks Read even
	// when in (os.Stdin) cannot be interrupted.
	go c.readLoop(bufio.NewReaderSize(in, 64*limits.KiB))
	return c
}

func (c *stdioConn) readLoop(r *bufio.Reader) {
	for {
		l := c.readLine(r)
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

// readLine reads up to the next newline, keeping at most c.max bytes; a
// longer line is consumed and reported as too long.
func (c *stdioConn) readLine(r *bufio.Reader) line {
	var buf []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > c.max+2 { // room for "\r\n"
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			if err == io.EOF && (len(buf) > 0 || tooLong) {
				// A last line without a newline is still a message.
				return line{data: buf, tooLong: tooLong}
			}
			return line{err: err}
		}
		return line{data: buf, tooLong: tooLong}
	}
}

// Read returns the next well-formed message. Malformed lines are answered
// here and skipped.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var l line
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l = <-c.lines:
		}
		if l.err != nil {
			return nil, l.err
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
		case !jsontext.Value(data).IsValid():
			c.reject(jsonrpc.CodeParseError, "parse error: not one valid JSON value (UTF-8, unique member names)")
			continue
		}
		msg, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			c.reject(jsonrpc.CodeInvalidRequest, "invalid JSON-RPC message")
			continue
		}
		return msg, nil
	}
}

// reject answers a message that could not be read. Its id is unknown, so
// the response's is null, as JSON-RPC prescribes.
func (c *stdioConn) reject(code int64, msg string) {
	c.log.Warn("mcp: malformed message", slog.Int64("code", code), slog.String("error", msg))
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{Error: &jsonrpc.Error{Code: code, Message: msg}})
	if err != nil {
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.w.Write(data)
	c.w.WriteByte('\n')
	c.w.Flush()
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
			return c.w.Flush()
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	c.w.Write(data)
	c.w.WriteByte('\n')
	return c.w.Flush()
}

// writeResult writes a tools/call response: the SDK's encoding of the
// placeholder result (before, after) around the real content. Errors stick
// in c.w and are returned by the Flush that follows.
func (c *stdioConn) writeResult(id jsonrpc.ID, res *kernel.Result, before, after []byte) {
	w := c.w
	w.WriteString(`{"jsonrpc":"2.0","id":`)
	c.scratch = appendID(c.scratch[:0], id)
	w.Write(c.scratch)
	w.WriteString(`,"result":`)
	w.Write(before)
	w.WriteString(`"content":[{"type":"text","text":"`)
	c.writeQuoted(res.Text)
	w.WriteString(`"}]`)
	if len(res.Structured) > 0 {
		w.WriteString(`,"structuredContent":`)
		w.Write(res.Structured)
	}
	w.Write(after)
	w.WriteString("}\n")
}

// writeQuoted writes s as the inside of a JSON string, quoting it a chunk
// at a time. Chunks end on UTF-8 sequence starts, so each valid sequence is
// quoted whole and the result is what quoting s at once gives (invalid
// bytes become U+FFFD either way, as encoding/json does).
func (c *stdioConn) writeQuoted(s string) {
	for len(s) > 0 {
		n := min(len(s), quoteChunkBytes)
		for n < len(s) && n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		if n == 0 {
			n = min(len(s), quoteChunkBytes)
		}
		c.scratch, _ = jsontext.AppendQuote(c.scratch[:0], s[:n])
		c.w.Write(c.scratch[1 : len(c.scratch)-1])
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
