package limits

import "time"

// Raw public HTTPS (net/fetch). A fetch policy narrows each of these; none
// can be widened past them. A zero policy field means the limit itself.
const (
	// FetchMaxResponseBytes bounds one response body as received (before
	// any Content-Encoding is undone).
	FetchMaxResponseBytes = 128 * MiB
	// FetchMaxExpandedBytes bounds one response body after decoding.
	FetchMaxExpandedBytes = 128 * MiB
	// FetchMaxRequests bounds the requests one fetcher sends over its
	// life, redirect hops included.
	FetchMaxRequests = 100
	// FetchMaxRedirects bounds the redirects one fetch follows.
	FetchMaxRedirects = 10
	// FetchMaxDeadline bounds one fetch from the first DNS query to the
	// last body byte.
	FetchMaxDeadline = 60 * time.Second
	// FetchMaxURLBytes bounds a URL given to fetch or a Location header.
	FetchMaxURLBytes = 8 * KiB
	// FetchMaxHeaderBytes bounds the response headers of one request.
	FetchMaxHeaderBytes = 64 * KiB
	// FetchMaxPorts bounds the ports a policy may allow besides 443.
	FetchMaxPorts = 64
	// FetchMaxPrivateDestinations bounds a policy's reviewed exceptions.
	FetchMaxPrivateDestinations = 64
	// FetchMaxHosts bounds the host names (and wildcards) a policy's
	// "hosts" may list.
	FetchMaxHosts = 256
	// FetchMaxCAFileBytes bounds a policy's extra trust roots file.
	FetchMaxCAFileBytes = 1 * MiB
	// PolicyFileMaxBytes bounds an HTTP or budget policy file.
	PolicyFileMaxBytes = 64 * KiB
	// FetchToolMaxInputBytes bounds net_fetch's arguments.
	FetchToolMaxInputBytes = 16 * KiB
)

// Group/task budgets (net/budget) and quota transfer (net/quota).
const (
	// BudgetMaxWindow bounds window_seconds.
	BudgetMaxWindow = 366 * 24 * time.Hour
	// BudgetMaxMinInterval bounds min_interval_seconds.
	BudgetMaxMinInterval = 24 * time.Hour
	// BudgetMaxCooldown is the longest Retry-After honoured as a timed
	// cooldown; a longer or unreadable one blocks until an operator
	// clears it.
	BudgetMaxCooldown = 7 * 24 * time.Hour
	// BudgetMaxWindowRequests and BudgetMaxWindowBytes bound the window
	// allowances a policy may name.
	BudgetMaxWindowRequests = 1 << 40
	BudgetMaxWindowBytes    = 1 << 50
	// BudgetMaxNameBytes bounds a group or task identity.
	BudgetMaxNameBytes = 256
	// BudgetStatusMaxTasks bounds the tasks and open reservations a status
	// lists (it says how many more there are).
	BudgetStatusMaxTasks = 100
	// BudgetMaxInFlightScan bounds the open reservations a request
	// refused for bytes reads to find when reservations in flight give
	// them back.
	BudgetMaxInFlightScan = 1024
	// BudgetBusyTimeout is how long a SQLite admission waits for another
	// process's transaction before failing unavailable.
	BudgetBusyTimeout = 30 * time.Second
	// QuotaSnapshotMaxBytes bounds a quota snapshot file.
	QuotaSnapshotMaxBytes = 64 * MiB
	// QuotaMaxTasks bounds the task counters one snapshot carries.
	QuotaMaxTasks = 100_000
)

// Receipt bounds of net/fetch.
const (
	// FetchReceiptHeaderBytes bounds one header value in a receipt; a
	// longer one is cut with a visible marker.
	FetchReceiptHeaderBytes = 1 * KiB
	// FetchDrainBytes bounds what is read (and counted) of a redirect or
	// error body before the connection is dropped.
	FetchDrainBytes = 64 * KiB
)

// FetchSettleTimeout bounds the settlement of a budget reservation after
// a fetch (which may run past the fetch's own deadline).
const FetchSettleTimeout = 10 * time.Second

// FetchToolMaxBodyBytes bounds the body net_fetch returns to a model: the
// tool narrows its policy's max_expanded_bytes to it, so a larger body is
// a limit failure, never a cut.
const FetchToolMaxBodyBytes = 4 * MiB

// BudgetMaxBatch bounds the admissions and settlements one process
// commits in one transaction.
const BudgetMaxBatch = 64
