package limits

import "time"

// The policy proxy of contained commands (net/egress): the bounds of one
// command's proxy. The HTTP policy's own bounds (max_requests,
// max_response_bytes, deadline_seconds) apply besides these.
const (
	// EgressMaxConns bounds the connections one command has open to its
	// proxy at once; more wait, unanswered, until one closes.
	EgressMaxConns = 64
	// EgressMaxHeaderBytes bounds one request's head from a command: its
	// request line and headers, the blank line that ends them included.
	EgressMaxHeaderBytes = 16 * KiB
	// EgressHeaderTimeout bounds the time a command takes to send one
	// request's head; a connection still sending it then is closed.
	EgressHeaderTimeout = 10 * time.Second
	// EgressIdleTimeout closes a tunnel in which no byte moved either way
	// for this long (a forwarded request's whole exchange is bounded by
	// the policy's deadline_seconds instead).
	EgressIdleTimeout = 2 * time.Minute
	// EgressReplyGrace is how long the proxy, having refused a request,
	// reads and discards what the command still sends before it closes
	// the connection (closing with unread bytes would reset it, and the
	// refusal could be lost).
	EgressReplyGrace = 1 * time.Second
	// EgressRelayBufferBytes is the buffer of each direction of a tunnel.
	EgressRelayBufferBytes = 64 * KiB
	// EgressMaxNotes bounds the refusals a command's result lists, one
	// line each; the rest are counted.
	EgressMaxNotes = 8
)
