package limits

import "time"

// The audit dashboard (serve/dashboard) and its in-memory source.
const (
	// DashboardRingEvents bounds the events the in-memory source keeps
	// (capkit serve --dashboard without a trail to read): the newest
	// ones; older ones leave it.
	DashboardRingEvents = 10_000
	// DashboardDefaultRows and DashboardMaxRows bound the events of one
	// /api/events answer (the limit parameter).
	DashboardDefaultRows = 100
	DashboardMaxRows     = 1_000
	// DashboardLiveClients bounds the live streams (/api/live) open at
	// once; one more is refused (503).
	DashboardLiveClients = 16
	// DashboardLiveRows bounds the events one live message carries; more
	// arrived since the last message follow in the next ones.
	DashboardLiveRows = 200
	// DashboardLiveWait is how often a live stream looks for events
	// besides being told of them (a source that cannot tell).
	DashboardLiveWait = 500 * time.Millisecond
	// DashboardLivePing is how often an idle live stream sends a comment,
	// so a proxy or the browser does not close it.
	DashboardLivePing = 15 * time.Second
	// DashboardMaxUpstreamTools bounds the upstream tools listed as
	// awaiting review or withdrawn.
	DashboardMaxUpstreamTools = 1_000
	// DashboardMaxQueryBytes bounds a request's query string.
	DashboardMaxQueryBytes = 4 * KiB
	// DashboardStatsTimeout bounds one /api/stats answer, its wait for a
	// turn included; DashboardStatsAtOnce bounds the answers computed at
	// once (each may count every call a source holds), the others wait.
	DashboardStatsTimeout = 30 * time.Second
	DashboardStatsAtOnce  = 2
	// DashboardChartTools bounds the tools the page's latency chart
	// draws (the busiest); the chart says how many more it leaves out.
	DashboardChartTools = 20
)

// The trail file reader (audit/trail.Reader), the dashboard's source for
// a trail after the fact.
const (
	// TrailReadBytes bounds the bytes one answer of the reader reads (a
	// window of events, the events after a position, a round of its
	// index): a window that filters out most lines is cut there and
	// gives the cursor to go on from.
	TrailReadBytes = 64 * MiB
	// TrailIndexCalls bounds the calls the reader's index keeps for its
	// counts (32 bytes each): the newest ones.
	TrailIndexCalls = 2_000_000
	// TrailIndexNames bounds the distinct names (actors, tools,
	// outcomes, policies) the index tells apart; the rest count as one.
	TrailIndexNames = 100_000
)
