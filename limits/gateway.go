package limits

import "time"

// Other MCP servers' tools behind the kernel (gateway/): the bounds of
// what an upstream sends and of how its processes are kept.
const (
	// UpstreamMaxMessageBytes bounds one message from an upstream (a
	// line on stdio, an event or a body over HTTP). An upstream past it
	// is stopped (its calls in flight fail with limit) and started again
	// on the next call; a result within it still meets its tool's output
	// bound.
	UpstreamMaxMessageBytes = 32 * MiB
	// UpstreamMaxTools bounds the tools one upstream lists; a longer
	// list is refused (none of its tools is offered).
	UpstreamMaxTools = 1_000
	// UpstreamMaxDefinitionBytes bounds one tool's definition (name,
	// title, description, schemas, annotations) in its canonical
	// encoding; a larger one cannot be approved.
	UpstreamMaxDefinitionBytes = 64 * KiB
	// UpstreamSummaryBytes cuts a tool's description where tool_search
	// shows it as the tool's summary.
	UpstreamSummaryBytes = 200
	// UpstreamMaxFailureBytes bounds the text of an upstream tool's own
	// failure (an isError result) passed on; the rest is cut, saying so.
	UpstreamMaxFailureBytes = 16 * KiB
	// UpstreamMaxLockBytes bounds the lock file of approved definitions.
	UpstreamMaxLockBytes = 64 * MiB
	// UpstreamMaxSecretBytes bounds one secret file (secret_env,
	// secret_headers).
	UpstreamMaxSecretBytes = 64 * KiB
	// UpstreamStartTimeout bounds an upstream's start: the process or
	// connection, the initialize handshake and its first tool listing.
	UpstreamStartTimeout = 60 * time.Second
	// UpstreamListWait bounds how long a client's first tools/list
	// waits for the upstreams starting for its session to list their
	// tools; one that lists later has its tools added, announced with
	// notifications/tools/list_changed.
	UpstreamListWait = 10 * time.Second
	// UpstreamStopGrace is how long an upstream asked to stop (its input
	// closed, its HTTP session deleted) has before it is killed.
	UpstreamStopGrace = 2 * time.Second
	// UpstreamNoticeWait bounds how long telling an upstream that a
	// call was cancelled waits for its turn to write: an upstream that
	// reads none of its input for that long misses the notice.
	UpstreamNoticeWait = 2 * time.Second
	// UpstreamMaxRestarts bounds the starts in a row that end in a crash
	// or a failed start, with no call answered between them; past it
	// the upstream is not started again until capkit restarts, and its
	// calls fail with unavailable saying so.
	UpstreamMaxRestarts = 5
	// UpstreamRestartDelay is the wait before the first restart after a
	// crash; each further one in a row waits twice as long, at most
	// UpstreamRestartMaxDelay. A call waits for it within its deadline.
	UpstreamRestartDelay    = 250 * time.Millisecond
	UpstreamRestartMaxDelay = 8 * time.Second
	// UpstreamProgressInterval bounds the rate of one call's progress
	// reports passed to its client: at most one per interval, the latest
	// one held until the interval has passed.
	UpstreamProgressInterval = 100 * time.Millisecond
	// UpstreamRelistInterval bounds the rate of listings after an
	// upstream's notifications/tools/list_changed: notifications in
	// between are taken together.
	UpstreamRelistInterval = 100 * time.Millisecond
	// UpstreamStderrBytes bounds what is kept of an upstream's standard
	// error (head and tail), for the host's log and review.
	UpstreamStderrBytes = 8 * KiB
)
