package egress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// serveConn answers one connection's one request, then closes it.
func (s *session) serveConn(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	c.SetReadDeadline(time.Now().Add(s.p.headerTimeout))
	buf, err := readHead(c, limits.EgressMaxHeaderBytes)
	switch {
	case errors.Is(err, errHeadTooLarge):
		s.reply(c, http.StatusRequestHeaderFieldsTooLarge, fault.LimitExceeded("the request's head (request line and headers) in bytes", limits.EgressMaxHeaderBytes, 0))
		return
	case errors.Is(err, errFromTimeout) && len(buf) > 0:
		s.reply(c, http.StatusRequestTimeout, fault.New(fault.Limit, "the request's head took longer than %v to arrive", s.p.headerTimeout))
		return
	case err != nil:
		return // closed or reset before a request: nothing to answer
	}
	c.SetReadDeadline(time.Time{})
	// The head is all in buf, so parsing it never reads from c; what
	// follows it (a body, a tunnel's first bytes) comes from buf's rest
	// and then from c.
	rest := bytes.NewReader(buf)
	br := bufio.NewReader(io.MultiReader(rest, c))
	req, err := http.ReadRequest(br)
	if err == nil && req.ProtoMajor != 1 {
		err = errors.New("not HTTP/1")
	}
	if err != nil {
		s.reply(c, http.StatusBadRequest, fault.New(fault.InvalidInput, "the request is not HTTP/1.1 a proxy can read"))
		return
	}
	if req.Method == http.MethodConnect {
		early, _ := br.Peek(br.Buffered())
		tail, _ := io.ReadAll(rest)
		s.tunnel(ctx, c, req, append(early, tail...))
		return
	}
	s.forward(ctx, c, req)
}

var (
	errHeadTooLarge = errors.New("request head too large")
	errFromTimeout  = errors.New("timed out")
)

// readHead reads from c until the blank line that ends a request's head,
// at most limit bytes; what it returns holds the head and may hold bytes
// after it.
func readHead(c net.Conn, limit int) ([]byte, error) {
	buf := make([]byte, 0, limit)
	for {
		if len(buf) == limit {
			return buf, errHeadTooLarge
		}
		from := max(0, len(buf)-3)
		n, err := c.Read(buf[len(buf):limit])
		buf = buf[:len(buf)+n]
		if headEnd(buf, from) {
			return buf, nil
		}
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return buf, errFromTimeout
			}
			return buf, err
		}
	}
}

// headEnd reports whether buf, searched from from on, holds the blank
// line ending a head (CRLF CRLF, or bare LFs as net/http accepts).
func headEnd(buf []byte, from int) bool {
	b := buf[from:]
	return bytes.Contains(b, []byte("\r\n\r\n")) || bytes.Contains(b, []byte("\n\n")) || bytes.Contains(b, []byte("\n\r\n"))
}

// refuse answers a request the proxy will not serve, records it for the
// result and the audit, and closes the connection.
func (s *session) refuse(c net.Conn, rec *record, what string, status int, err error) {
	rec.err = err
	s.refused(what, err)
	s.reply(c, status, err)
}

// statusOf is the HTTP status of a refusal.
func statusOf(err error) int {
	switch fault.CodeOf(err) {
	case fault.Denied:
		return http.StatusForbidden
	case fault.Limit, fault.Deferred:
		return http.StatusTooManyRequests
	case fault.InvalidInput:
		return http.StatusBadRequest
	}
	return http.StatusBadGateway
}

// reply writes a refusal, its fault in a header and its message in the
// body, and lingers briefly (limits.EgressReplyGrace) for what the
// command still sends, so that closing does not reset the connection
// before the refusal is read.
func (s *session) reply(c net.Conn, status int, err error) {
	fe := fault.As(err)
	body := "capkit network proxy: " + string(fe.Code) + ": " + fe.Message + "\n"
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nX-Capkit-Fault: %s\r\n",
		status, http.StatusText(status), len(body), fe.Code)
	if fe.RetryAfter > 0 {
		fmt.Fprintf(&b, "Retry-After: %d\r\n", int64(math.Ceil(fe.RetryAfter.Seconds())))
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	c.SetWriteDeadline(time.Now().Add(s.p.headerTimeout))
	if _, err := io.WriteString(c, b.String()); err != nil {
		return
	}
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(limits.EgressReplyGrace))
	io.Copy(io.Discard, io.LimitReader(c, limits.EgressMaxHeaderBytes))
}
