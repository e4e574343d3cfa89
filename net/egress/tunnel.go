package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/budget"
)

// tunnel answers CONNECT: it admits the destination, dials it, says so,
// and relays bytes both ways (early first: what the command sent after
// its request) until both directions end.
func (s *session) tunnel(ctx context.Context, c net.Conn, req *http.Request, early []byte) {
	rec := &record{kind: "connect", start: time.Now()}
	defer s.audit(ctx, rec)
	what := "CONNECT " + clip.Text(req.Host)
	host, port, err := splitHostPort(req.Host)
	rec.host, rec.port = host, port
	if err == nil {
		err = s.p.dialer.Check(host, port)
	}
	if err != nil {
		s.refuse(c, rec, what, statusOf(err), err)
		return
	}
	charge, err := s.admit(ctx)
	if err != nil {
		s.refuse(c, rec, what, statusOf(err), err)
		return
	}
	up, err := s.dial(ctx, host, port)
	if err != nil {
		s.settle(ctx, charge, 0, budget.Outcome{})
		s.refuse(c, rec, what, dialStatus(err), err)
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { up.Close() })
	defer stop()
	c.SetWriteDeadline(time.Now().Add(s.p.headerTimeout))
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		s.settle(ctx, charge, 0, budget.Outcome{})
		rec.err = fault.Wrap(fault.Unavailable, err, "the command closed its connection before the tunnel opened")
		return
	}
	c.SetWriteDeadline(time.Time{})
	rec.sent, rec.received, rec.err = s.relay(c, up, early, s.maxReceived(charge))
	s.settle(ctx, charge, rec.received, budget.Outcome{})
}

// dial connects to the destination within the policy's deadline.
func (s *session) dial(ctx context.Context, host string, port uint16) (net.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, s.p.policy.Deadline())
	defer cancel()
	up, err := s.p.dialer.Dial(dctx, host, port)
	if err != nil && dctx.Err() != nil && ctx.Err() == nil && fault.CodeOf(err) != fault.Denied {
		return nil, fault.Wrap(fault.Limit, err, "connecting to %s took longer than the network policy's deadline_seconds (%d s)", host, s.p.policy.DeadlineSeconds)
	}
	return up, err
}

// dialStatus is the HTTP status of a failed dial.
func dialStatus(err error) int {
	if fault.CodeOf(err) == fault.Limit {
		return http.StatusGatewayTimeout
	}
	return statusOf(err)
}

// errTooMuch ends a tunnel whose server sent more than its bound.
var errTooMuch = errors.New("the server sent more than its bound")

// relay copies between the command's connection c and the server's up:
// the command's bytes unbounded, the server's at most max (one more cuts
// the tunnel). A direction that reaches its end closes the other side's
// writing; an error, a bound or limits.EgressIdleTimeout of silence both
// ways closes both.
func (s *session) relay(c, up net.Conn, early []byte, max int64) (sent, received int64, err error) {
	w := newWatch(s.p.idleTimeout, func() { c.Close(); up.Close() })
	defer w.stop()
	if len(early) > 0 {
		n, err := up.Write(early)
		sent += int64(n)
		if err != nil {
			return sent, 0, nil
		}
	}
	var toServer sync.WaitGroup
	var upErr error
	toServer.Go(func() {
		var n int64
		n, upErr = copyWatched(up, c, -1, w)
		sent += n
		finish(upErr, up, c)
	})
	received, err = copyWatched(c, up, max, w)
	finish(err, c, up)
	toServer.Wait()
	switch {
	case errors.Is(err, errTooMuch):
		return sent, received, fault.New(fault.Limit, "the server sent more than the %d bytes a tunnel may bring (max_response_bytes of the network policy, or what its budget had left); the tunnel was cut", max)
	case w.fired.Load():
		return sent, received, fault.New(fault.Limit, "the tunnel moved no byte either way for %v and was closed", s.p.idleTimeout)
	}
	return sent, received, nil
}

// finish ends one direction: at the source's end the destination's
// writing is closed; after an error both connections are.
func finish(err error, dst, src net.Conn) {
	if err == nil {
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
			return
		}
	}
	dst.Close()
	src.Close()
}

// copyWatched copies src to dst until src ends (nil), at most max bytes
// when max is not negative (errTooMuch when src has more), telling w of
// every read that brought bytes.
func copyWatched(dst, src net.Conn, max int64, w *watch) (int64, error) {
	buf := make([]byte, limits.EgressRelayBufferBytes)
	var n int64
	for {
		p := buf
		if max >= 0 {
			// At the bound one byte is read to see whether src has more.
			p = buf[:min(int64(len(buf)), max-n+1)]
		}
		k, err := src.Read(p)
		if k > 0 {
			w.touch()
			if max >= 0 && n+int64(k) > max {
				k = int(max - n)
				dst.Write(p[:k])
				return max, errTooMuch
			}
			if _, werr := dst.Write(p[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// watch closes a tunnel after idle passes with no byte moved.
type watch struct {
	idle           time.Duration
	last           atomic.Int64 // nanoseconds since start at the last byte
	start          time.Time
	fired, stopped atomic.Bool
	timer          *time.Timer
}

func newWatch(idle time.Duration, expire func()) *watch {
	w := &watch{idle: idle, start: time.Now()}
	w.timer = time.AfterFunc(idle, func() {
		if w.stopped.Load() {
			return
		}
		quiet := time.Since(w.start) - time.Duration(w.last.Load())
		if quiet < w.idle {
			w.timer.Reset(w.idle - quiet)
			return
		}
		w.fired.Store(true)
		expire()
	})
	return w
}

func (w *watch) touch() { w.last.Store(int64(time.Since(w.start))) }

func (w *watch) stop() {
	w.stopped.Store(true)
	w.timer.Stop()
}
