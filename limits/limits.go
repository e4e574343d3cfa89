// Package limits is the one place where capkit's bounds are defined. Each
// capability package refers to these constants; tests exercise each at the
// limit and one past it. Values are those of the capability reference:
// defaults are what a zero option means, hard limits are what no option can
// exceed.
package limits

import "time"

const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
)

// Kernel policy defaults: what a zero field of kernel.Policy means.
const (
	DefaultMaxCalls      = 1_000
	DefaultMaxInputBytes = 1 * MiB
	// DefaultMaxOutputBytes is every tool's output bound unless its
	// package or the host sets another: about 25,000 tokens, what a model
	// can take in one result. Tools whose results can be longer return a
	// window of whole units that fits and name the next offset.
	DefaultMaxOutputBytes = 100 * KiB
	DefaultTimeout        = 30 * time.Second
	// DefaultMaxConcurrent bounds the calls of one tool running at once,
	// over every session of a runtime, counting handlers still running
	// past their deadline: a handler stuck where its context does not
	// reach holds its slot until it returns.
	DefaultMaxConcurrent = 64

	// HardMaxInputBytes and HardMaxOutputBytes bound any policy.
	HardMaxInputBytes  = 128 * MiB
	HardMaxOutputBytes = 128 * MiB
	HardMaxTimeout     = 10 * time.Minute
	HardMaxCalls       = 1_000_000
	HardMaxConcurrent  = 4_096
)

// EchoMaxBytes bounds caller text (a name, a path) echoed in a message.
const EchoMaxBytes = 64

// Catalog search.
const (
	SearchMinResults     = 1
	SearchMaxResults     = 12
	SearchDefaultResults = 5
	// ToolSearchIndexMinEntries: a catalog of more tools than this is
	// ranked by the runtime's tool index (BM25 over names and
	// descriptions, where the host sets one) instead of word matching.
	ToolSearchIndexMinEntries = 100
)

// Model-facing file tools.
const (
	ReadDefaultLines   = 2_000
	ReadMaxLineRunes   = 2_000 // a longer line is cut with a visible marker
	WriteMaxBytes      = 16 * MiB
	EditMaxFileBytes   = 16 * MiB
	ListMaxEntries     = 1_000
	GlobMaxResults     = 1_000
	GrepMaxMatches     = 500
	GrepMaxFileBytes   = 16 * MiB
	WalkMaxFiles       = 100_000
	WalkMaxDepth       = 64
	DiffMaxBytes       = 8 * KiB
	PathMaxBytes       = 4 * KiB
	ToolSearchMaxQuery = 1 * KiB

	// HotToolListMaxBytes bounds the tools/list JSON of the default hot
	// set (what capkit serve --root DIR lists first), which a model pays
	// for on every turn. Not enforced at run time: the e2e suite's
	// TestHotToolListSize holds the descriptions and schemas to it.
	HotToolListMaxBytes = 8_000

	// ReadMaxLines bounds read_file's limit argument; the output bound
	// usually binds first.
	ReadMaxLines = 1_000_000
	// GrepMaxLineRunes cuts a matching line shown by grep.
	GrepMaxLineRunes = 500
	// GrepMaxPatternBytes bounds grep's and glob's pattern.
	GrepMaxPatternBytes = 4 * KiB
	// GitignoreMaxBytes bounds one .gitignore file grep reads; a larger
	// one is not honoured, and grep says so.
	GitignoreMaxBytes = 1 * MiB
	// EditMaxDiffHunks bounds the hunks of edit_file's diff (replace_all).
	EditMaxDiffHunks = 20

	// Default policies of the file tools (tools.DefaultPolicy).
	FileToolsReadMaxCalls    = 10_000
	FileToolsWriteMaxCalls   = 5_000
	FileToolsReadOutputBytes = 8 * MiB // a 4 MiB window plus line numbers
	FileToolsWriteInputBytes = 2*WriteMaxBytes + 64*KiB
)

// Fixed-file catalogs.
const (
	CatalogDefaultEntries   = 64
	CatalogDefaultFileBytes = 64 * KiB
	CatalogHardEntries      = 1_024
	CatalogHardFileBytes    = 4 * MiB
	CatalogIDMaxBytes       = 128
	// CatalogToolInputBytes is the default input bound of a catalog tool
	// (one identifier in a JSON object) when its policy leaves it zero.
	CatalogToolInputBytes = 256
)

// Scripts.
const (
	ScriptDefaultSteps       = 10_000_000
	ScriptDefaultTimeout     = 30 * time.Second
	ScriptDefaultResultBytes = 1 * MiB
	ScriptHardResultBytes    = 128 * MiB
	ScriptMaxSourceBytes     = 1 * MiB
	ScriptHardSteps          = 10_000_000_000
	ScriptHardTimeout        = 10 * time.Minute
	// ScriptDefaultMemoryBytes bounds the heap a script may grow, in the
	// script worker process (address space) and, approximately, in process.
	ScriptDefaultMemoryBytes = 256 * MiB
	ScriptHardMemoryBytes    = 4 * GiB
	// ScriptMemoryCheckSteps is how often (in steps) a script's heap
	// growth is sampled.
	ScriptMemoryCheckSteps = 256
	// ScriptMaxPrintBytes bounds what a script's print calls emit in all.
	ScriptMaxPrintBytes = 1 * MiB
	// ScriptMaxCallArgBytes bounds the JSON of one tool.call argument
	// before the tool's own input bound applies.
	ScriptMaxCallArgBytes = HardMaxInputBytes
	// ScriptWorkerStderrBytes bounds the diagnostics kept from a worker.
	ScriptWorkerStderrBytes = 64 * KiB
	// ScriptWorkerGrace is how long past its deadline a script may take to
	// stop before its worker is killed (or, in process, abandoned).
	ScriptWorkerGrace = 2 * time.Second
	// ScriptLabelMaxDepth bounds how deeply nested a value given to a
	// built-in or a tool may be when labels are followed through it.
	ScriptLabelMaxDepth = JSONMaxDepth
	// ScriptProvenanceExplainItems bounds how many sources, regions and
	// calls a provenance denial names; ScriptProvenanceExplainDepth how
	// far back through calls it follows one source.
	ScriptProvenanceExplainItems = 8
	// ScriptProvenanceAnalysisSteps bounds the static analysis a script
	// run with provenance needs (syntax nodes visited, counting each
	// region's body once per region around it).
	ScriptProvenanceAnalysisSteps = 10_000_000
	ScriptProvenanceExplainDepth  = 4
	// ScriptDeclassifyShownBytes bounds how much of a value the person
	// asked to declassify it is shown (its JSON, cut on a character).
	ScriptDeclassifyShownBytes = 2 * KiB
)

// Regular-file IO. Streaming (digest, copy) takes an explicit budget of
// up to math.MaxInt64 bytes from a host; FileToolStreamBytes is the budget
// the model-facing tools use unless the host sets another.
const (
	FileBufferedMaxBytes = 128 * MiB
	FileToolStreamBytes  = 1 * GiB
	// FileChunkBytes is how much a digest or copy moves between
	// cancellation checks and progress reports.
	FileChunkBytes = 8 * MiB
)

// File/tree metadata. Defaults are what a zero option means; options may
// raise entries and depth up to the hard limits (bytes are only summed, so
// they may go up to math.MaxInt64).
const (
	TreeDefaultEntries = 10_000
	TreeDefaultBytes   = 1 * GiB
	TreeDefaultDepth   = 64
	TreeHardEntries    = 1_000_000
	TreeHardDepth      = 256
)

// Mutable state and publication. Publish fsyncs the staged tree before
// renaming it, walking at most TreeHardEntries entries TreeHardDepth deep.
const (
	StateMaxBytes = 128 * MiB
)

// Exact-file ZIP.
const (
	ZipMaxFiles            = 10_000
	ZipMaxMemberBytes      = 128 * MiB
	ZipMaxTotalBytes       = 1 * GiB
	ZipMaxCentralDirectory = 4 * MiB
	ZipMaxPathDepth        = 64
	// ZipMaxManifestBytes bounds an expectation manifest ("SHA256  NAME"
	// lines): room for ZipMaxFiles names of a few hundred bytes.
	ZipMaxManifestBytes = 4 * MiB
	// ZipDefaultTimeout is the zip tools' deadline: an archive of
	// ZipMaxTotalBytes is read, hashed and written in it.
	ZipDefaultTimeout = 5 * time.Minute
	// ZipCreateOutputBytes bounds zip_create's result, the receipt of
	// every member's name, size and SHA-256 (the other zip tools take the
	// default bound; zip_list pages): room for a few thousand members.
	ZipCreateOutputBytes = 4 * MiB
)

// Text and JSON.
const (
	TextDefaultBytes = 4 * MiB
	TextMaxBytes     = 128 * MiB
	JSONDefaultBytes = 32 * MiB
	JSONMaxBytes     = 128 * MiB
	JSONMaxDepth     = 512
)

// Static HTML.
const (
	HTMLMaxBytes = 4 * MiB
	HTMLMaxNodes = 50_000
	HTMLMaxDepth = 128
	// HTMLMaxAttributes bounds the attributes of one element, counting
	// duplicates (which the tokenizer would otherwise fold silently).
	HTMLMaxAttributes = 1_000
	// HTMLToolMaxInputBytes is the input bound of the HTML tool: a
	// document at HTMLMaxBytes as a JSON string, escapes included.
	HTMLToolMaxInputBytes = 6*HTMLMaxBytes + 64*KiB
)

// RSS/Atom.
const (
	FeedMaxBytes   = 2 * MiB
	FeedMaxNodes   = 12_000
	FeedMaxDepth   = 32
	FeedMaxEntries = 1_000
	// FeedMaxAttributes bounds the attributes of one element.
	FeedMaxAttributes = 1_000
	// FeedMaxRepairWarnings bounds the repairs of a malformed feed listed
	// one by one; the rest are counted in one more warning.
	FeedMaxRepairWarnings = 100
	// FeedToolMaxInputBytes is the input bound of the feed tool: a feed
	// at FeedMaxBytes as a JSON string, escapes included.
	FeedToolMaxInputBytes = 6*FeedMaxBytes + 64*KiB
)

// Response validation.
const (
	// SniffMaxBytes bounds a body given to the response validator: the
	// largest response raw HTTPS returns.
	SniffMaxBytes = 128 * MiB
	// SniffHeadBytes is how much of the start of a body is examined to
	// classify it; HTML bodies are also read whole, within HTMLMaxBytes,
	// to detect access screens.
	SniffHeadBytes = 64 * KiB
	// SniffToolMaxInputBytes bounds inline text given to the sniff tool
	// (larger bodies are passed by path).
	SniffToolMaxInputBytes = 6*HTMLMaxBytes + 64*KiB
)

// Tabular input.
const (
	TabularMaxCompressedBytes = 32 * MiB
	TabularMaxExpandedBytes   = 64 * MiB
	TabularMaxColumns         = 256
	TabularDefaultRows        = 1_000_000
	// TabularHardRows bounds an explicit scan budget: every row takes at
	// least one byte of the expanded input, so more can never be scanned.
	TabularHardRows = TabularMaxExpandedBytes
	// TabularMaxRecordBytes bounds one record (a quoted field may span
	// lines), so a newline-free bomb stops early in little memory.
	TabularMaxRecordBytes = 8 * MiB
	// TabularMaxZipEntries bounds the entries (directories included) a ZIP
	// may list before its central directory is read: one CSV is expected.
	TabularMaxZipEntries = 64
)

// Literal passages.
const (
	PassageMaxSourceBytes = 128 * MiB
	PassageMaxMatches     = 1_000
)

// Generic JSON journal.
const (
	JournalMaxEventBytes   = 64 * KiB
	JournalMaxJournalBytes = 32 * MiB
	// JournalMaxInputBytes bounds an event before canonicalization (which
	// only removes whitespace and shortens escapes and numbers); the event
	// bound applies to the canonical form.
	JournalMaxInputBytes = 4 * JournalMaxEventBytes
	// JournalMaxDepth bounds the nesting of an event.
	JournalMaxDepth = 128
	// JournalMaxReadRecords bounds the records journal_read returns in one
	// call (also its default).
	JournalMaxReadRecords = 1000
	// JournalReadOutputBytes bounds journal_read's result: room for one
	// record of the largest event, which the result holds twice (its text
	// and its structured content), so that every record can be read.
	JournalReadOutputBytes = 2*JournalMaxEventBytes + 4*KiB
)

// MCP server (package mcpserver).
const (
	// MCPMaxMessageBytes bounds one JSON-RPC message from a client: a stdio
	// line or an HTTP request body. It leaves room for the largest file-tool
	// input (FileToolsWriteInputBytes) and its envelope.
	MCPMaxMessageBytes = 64 * MiB
	// MCPDrainTimeout bounds how long a stdio session whose client closed
	// its input waits for the answers still owed (each call is also
	// bounded by its own deadline, at most HardMaxTimeout).
	MCPDrainTimeout = HardMaxTimeout
	// MCPDefaultMaxSessions bounds live MCP sessions over HTTP.
	MCPDefaultMaxSessions = 64
	// MCPMaxPendingSessions bounds the HTTP requests without a session id
	// (those that may create a session) served at once.
	MCPMaxPendingSessions = 16
	// MCPDefaultSessionIdle closes an HTTP session after this long without
	// a request.
	MCPDefaultSessionIdle = 30 * time.Minute
	// MCPDefaultInFlightBytes bounds the bytes of HTTP request bodies held
	// at once across all connections (each body counts its Content-Length,
	// or MCPMaxMessageBytes when it has none, from before it is read until
	// its answer is written); a request past it is refused with 503.
	MCPDefaultInFlightBytes = 256 * MiB
	// MCPDefaultBodyTimeout bounds how long a client may take to send one
	// request body once its headers arrived (slow bodies).
	MCPDefaultBodyTimeout = 30 * time.Second
	// MCPHardMaxSessions, MCPHardMaxInFlightBytes and MCPHardMaxBodyTimeout
	// bound what configuration may set.
	MCPHardMaxSessions      = 10_000
	MCPHardMaxInFlightBytes = 4 * GiB
	MCPHardMaxBodyTimeout   = 10 * time.Minute
	MCPHardMaxSessionIdle   = 24 * time.Hour
)

// Configuration and serving (capkit serve, tools, call).
const (
	// ConfigMaxBytes bounds a capkit.toml.
	ConfigMaxBytes = 1 * MiB
	// TokenMinBytes and TokenMaxBytes bound an HTTP bearer token read from
	// a token file: shorter tokens are guessable, longer ones are mistakes.
	TokenMinBytes = 16
	TokenMaxBytes = 4 * KiB
	// HTTPShutdownGrace is how long serve --http waits for calls in flight
	// when it is stopped.
	HTTPShutdownGrace = 5 * time.Second
	// HTTPReadHeaderTimeout bounds how long a client may take to send
	// request headers (slowloris).
	HTTPReadHeaderTimeout = 10 * time.Second
)

// The audit trail (package audit and its sinks).
const (
	// AuditMaxEventBytes bounds one canonical audit event: the journal's
	// bound, whose framing the trail uses. A larger event is replaced by
	// one that says so.
	AuditMaxEventBytes = JournalMaxEventBytes
)

// The audit trail's file (audit/trail).
const (
	// AuditDefaultMaxFileBytes is the size past which a trail file is
	// rotated unless audit_max_bytes says otherwise.
	AuditDefaultMaxFileBytes = 256 * MiB
	// AuditMinFileBytes is the least rotation size: room for the largest
	// record several times over.
	AuditMinFileBytes = 1 * MiB
	// AuditLockWait bounds the wait for another process's append to the
	// same trail; past it the event is not written, and that is counted
	// and logged.
	AuditLockWait = 2 * time.Second
)

// AuditCloseGrace bounds how long a closing host waits for its audit
// sinks to deliver what they hold (what a store did not take by then
// stays in its spool).
const AuditCloseGrace = 3 * time.Second

// The audit trail's PostgreSQL store (audit/pgstore).
const (
	// AuditHardMaxFileBytes bounds audit_max_bytes.
	AuditHardMaxFileBytes = 16 * GiB
	// AuditDefaultSpoolBytes bounds the local spool where events wait
	// while the store is unreachable; past it they are counted as lost,
	// and the count is itself an event once the store is back.
	AuditDefaultSpoolBytes = 64 * MiB
	AuditMinSpoolBytes     = 1 * MiB
	AuditHardMaxSpoolBytes = 16 * GiB
	// AuditQueueEvents bounds the events waiting in memory for the store;
	// past it they go to the spool.
	AuditQueueEvents = 4_096
	// AuditBatchEvents bounds the events of one insert.
	AuditBatchEvents = 512
	// AuditStoreLinger is how long the sender waits, after an event
	// arrives in an empty queue, for more to insert with it: what a
	// process killed outright (SIGKILL) can lose from the store is at
	// most this long's events (the file trail has them).
	AuditStoreLinger = 20 * time.Millisecond
	// AuditRetryMin and AuditRetryMax bound the wait before the store is
	// tried again after a failure (doubling from the one to the other).
	AuditRetryMin = 100 * time.Millisecond
	AuditRetryMax = 5 * time.Second
)

// AuditStoreTimeout bounds one exchange with the audit store (connecting,
// an insert, a reader's query).
const AuditStoreTimeout = 5 * time.Second

// Audit readers (the dashboard's sources).
const (
	// AuditPollInterval is how often a reader looks for new events (a
	// store's rows, a file's growth by another process).
	AuditPollInterval = 250 * time.Millisecond
	// AuditBuckets bounds the buckets of a time series.
	AuditBuckets = 60
	// AuditNamesMaxAge is how long a store reader keeps the actors and
	// tools it listed; AuditMaxNames bounds each list.
	AuditNamesMaxAge = 5 * time.Second
	AuditMaxNames    = 1_000
	// AuditVerifyBatch rows are verified a query, at most AuditVerifyRounds
	// queries a poll: a large store is verified over several polls.
	AuditVerifyBatch  = 5_000
	AuditVerifyRounds = 20
)

// OpenTelemetry export (audit/telemetry).
const (
	// TelemetrySpanBatchTimeout is the longest a span waits to be
	// exported while the collector answers. TelemetrySpanQueue bounds the
	// spans waiting for export (past it a call's span is dropped,
	// counted; its metrics are kept), TelemetrySpanBatch the spans of one
	// export request.
	TelemetrySpanBatchTimeout = time.Second
	TelemetrySpanQueue        = 8_192
	TelemetrySpanBatch        = 512
	// TelemetryMetricInterval is how often metrics are exported.
	TelemetryMetricInterval = 10 * time.Second
	// TelemetryExportTimeout bounds one export request.
	TelemetryExportTimeout = 10 * time.Second
)

// TelemetryQueueEvents and TelemetryQueueBytes bound the events waiting
// for the exporter process; past either they are dropped, counted.
// TelemetryFlushInterval is
// how often the waiting events are handed to it, together (a call wakes
// no goroutine).
const (
	TelemetryQueueEvents   = 8_192
	TelemetryQueueBytes    = 8 * MiB
	TelemetryFlushInterval = 100 * time.Millisecond
)
