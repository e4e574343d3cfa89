package mcpserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/limits"
)

// liveSession is an HTTP session the handler keeps: how many of its
// requests are being served (an open event stream counts) and when the
// last one ended, which is what eviction looks at.
type liveSession struct {
	ss     *mcp.ServerSession
	tenant *tenant
	busy   int
	last   time.Time
}

// readBody reads a POST body whole, under the in-flight byte budget and
// the body deadline, before the request may take a session slot: a client
// that sends headers and never finishes its body holds at most its share
// of the budget, for at most BodyTimeout, and never a session. The
// returned release gives the bytes back once the answer is written.
func (h *httpHandler) readBody(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	max := int64(limits.MCPMaxMessageBytes)
	if r.ContentLength > max {
		h.refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", max))
		return nil, false
	}
	held := max
	if r.ContentLength >= 0 {
		held = r.ContentLength
	}
	if !h.inFlight.TryAcquire(held) {
		w.Header().Set("Retry-After", "1")
		h.refuse(w, r, http.StatusServiceUnavailable, "too many request bytes in flight; retry shortly")
		return nil, false
	}
	body, err := readWithin(w, r, r.ContentLength, max, h.s.opts.BodyTimeout)
	if err != nil {
		h.inFlight.Release(held)
		h.refuseBody(w, r, err, max)
		return nil, false
	}
	if n := int64(len(body)); n < held {
		h.inFlight.Release(held - n)
		held = n
	}
	id, err := bodyID(body)
	if err != nil {
		h.inFlight.Release(held)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(nullIDError(jsonrpc.CodeInvalidRequest, "invalid JSON-RPC message: "+err.Error()))
		return nil, false
	}
	if id.IsValid() {
		r.Header.Set(requestIDHeader, auditRequestID(id))
	} else {
		r.Header.Del(requestIDHeader)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return func() { h.inFlight.Release(held) }, true
}

// readWithin reads at most max bytes of r's body before timeout; size is
// the declared length (negative when unknown: the buffer then grows with
// what arrives, never to max up front).
func readWithin(w http.ResponseWriter, r *http.Request, size, max int64, timeout time.Duration) ([]byte, error) {
	rc := http.NewResponseController(w)
	// A handler mounted behind a writer without deadlines (tests, other
	// servers) still reads bounded by max; the server decides the time.
	_ = rc.SetReadDeadline(time.Now().Add(timeout))
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size))
	}
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, max)); err != nil {
		// The deadline stays: the server must not wait for the rest of
		// this body before it answers and closes the connection.
		w.Header().Set("Connection", "close")
		return nil, err
	}
	_ = rc.SetReadDeadline(time.Time{})
	return buf.Bytes(), nil
}

func (h *httpHandler) refuseBody(w http.ResponseWriter, r *http.Request, err error, max int64) {
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		h.refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", max))
	case errors.As(err, &ne) && ne.Timeout():
		h.refuse(w, r, http.StatusRequestTimeout, fmt.Sprintf("request body not received within %v", h.s.opts.BodyTimeout))
	default:
		h.refuse(w, r, http.StatusBadRequest, "request body could not be read")
	}
}

// enter counts a request of session id as being served; leave ends it.
func (h *httpHandler) enter(id string) (leave func()) {
	h.mu.Lock()
	e := h.live[id]
	if e != nil {
		e.busy++
	}
	h.mu.Unlock()
	return func() {
		if e == nil {
			return
		}
		h.mu.Lock()
		e.busy--
		e.last = time.Now()
		h.mu.Unlock()
	}
}

// evictLocked removes the least recently used idle session, of tenant t
// if it has one idle, if there is one, and returns it for the caller to
// close outside the lock. Clients that go away without DELETE (the
// TypeScript SDK's close, the Inspector) leave idle sessions behind;
// evicting them keeps a full server usable.
func (h *httpHandler) evictLocked(t *tenant) *mcp.ServerSession {
	var victim string
	var oldest time.Time
	own := false
	for id, e := range h.live {
		if e.busy != 0 {
			continue
		}
		mine := e.tenant == t
		if victim == "" || mine && !own || mine == own && e.last.Before(oldest) {
			victim, oldest, own = id, e.last, mine
		}
	}
	if victim == "" {
		return nil
	}
	ss := h.live[victim].ss
	delete(h.live, victim)
	return ss
}

// portAllowed reports whether port (from a Host or Origin header) names
// the listener: the same number, or none when the listener is on the
// scheme's default. Before Serve knows the listener, any numeric port is
// accepted (a mounting server decides who reaches the handler).
func (h *httpHandler) portAllowed(port, scheme string) bool {
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return false
	}
	want := h.port.Load()
	return want == 0 || uint64(want) == n
}

// isNewProtocol reports whether a request speaks the stateless protocol
// (2026-07-28 or later), by its Mcp-Protocol-Version header.
func isNewProtocol(r *http.Request) bool {
	// Versions are dates, YYYY-MM-DD: they order as strings.
	return r.Header.Get("Mcp-Protocol-Version") >= StatelessVersion
}

// StatelessVersion is the first protocol version served without sessions.
const StatelessVersion = "2026-07-28"

// errBatch refuses a JSON-RPC batch, over HTTP as over stdio: the
// protocol dropped them (2025-06-18), and one request a POST keeps every
// id checked and every call its own.
var errBatch = errors.New("JSON-RPC batches are not supported: send one message per request")

// bodyID is an HTTP message's id (zero for a notification, or a body
// that is not one JSON object). It refuses a batch, and an id the SDK
// would not echo exactly (see parseID). Anything else about the body is
// the SDK's to judge.
func bodyID(body []byte) (jsonrpc.ID, error) {
	body = bytes.TrimLeft(body, " \t\r\n")
	if len(body) > 0 && body[0] == '[' {
		return jsonrpc.ID{}, errBatch
	}
	var m struct {
		ID jsontext.Value `json:"id"`
	}
	if len(body) == 0 || body[0] != '{' || jsonv2.Unmarshal(body, &m) != nil {
		return jsonrpc.ID{}, nil
	}
	return parseID(m.ID)
}
