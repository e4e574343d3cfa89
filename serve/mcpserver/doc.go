// Package mcpserver serves a kernel's tools over the Model Context Protocol,
// with the official Go SDK (github.com/modelcontextprotocol/go-sdk), over
// stdio and Streamable HTTP.
//
// Each MCP session gets its own kernel session, created by the host's
// newSession function: a stdio connection is one session; over HTTP, each
// MCP session id is one. A session's tools/list is its kernel session's
// Specs (hot tools plus those tool_search activated, among those granted);
// when tool_search activates tools, they are added to that session's
// list and the client receives notifications/tools/list_changed.
//
// Every tools/call goes through kernel.Session.Call, whatever the name: a
// name the runtime does not know is a protocol error (invalid params), as
// are malformed requests; everything else, including a tool the session is
// not granted (denied) and arguments that fail the schema (invalid_input),
// is a tool result. A failure is an isError result whose text is
// "code: message" (and "(retry after Ns)" when a retry may be admitted
// later) and whose _meta["capkit/fault"] is {"code", "message",
// "retry_after_seconds"}; never structuredContent, which clients check
// against the tool's output schema, failures included. The kernel has already
// replaced the detail of io and internal failures with a generic message
// for untrusted sessions.
//
// A session's instructions are Options.Instructions plus what
// Options.SessionInstructions says for its kernel session (the host names
// the roots there). With Options.ClientRoots, a client's own roots
// (roots/list) narrow its session's roots, never widen them (roots.go).
//
// What the SDK does not do, or does slowly, this package does by hand,
// kept small and checked against the SDK by tests:
//
//   - The stdio transport (stdio.go) is ours: the SDK's closes the
//     connection on the first malformed line, copies every response again
//     to append the newline, and reads and writes blocking descriptors.
//     Ours answers a malformed line with a JSON-RPC error and keeps
//     reading, bounds each message (limits.MCPMaxMessageBytes), reads and
//     writes pipes through the runtime's poller (poll_unix.go), asks for a
//     1 MiB output pipe on Linux (pipe_linux.go), and writes each message
//     with one write (or writes of 256 KiB for a large one).
//   - On an initialized stdio session, a plain tools/call is run by the
//     transport itself (direct.go) and answered with the bytes the SDK
//     would write (TestDirectCallsMatchSDK): for a small call most of the
//     server's CPU went to the SDK decoding the request twice with a
//     decoder that allocates 32 KiB each time (BenchmarkStdioSmallCall).
//     Every other message, and every call of the stateless 2026-07-28
//     protocol, goes to the SDK.
//   - On stdio, a successful tool result the SDK does handle does not go
//     through its encoder (fastpath.go): the SDK would escape the text
//     once and compact it three more times, which for a 4 MiB file was
//     most of the server's CPU. The SDK still builds and encodes the
//     response around a placeholder; the transport writes the text in the
//     placeholder's place, escaped once (escape.go, eight bytes at a time,
//     fuzzed against jsontext) straight into its output buffer, and the
//     structured content as the kernel encoded it (BenchmarkStdio4MiBResult,
//     BenchmarkEscape).
//   - HTTP (http.go) adds what the SDK leaves to the host: Host and Origin
//     validation against loopback and configured names, an optional bearer
//     token, a bound on live sessions, loopback binding by default and a
//     graceful stop.
package mcpserver
