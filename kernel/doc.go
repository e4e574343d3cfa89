// Package kernel is the one path every tool call takes. A [Builder]
// registers tools with their policies ([AddTool] for typed handlers);
// [Builder.Build] freezes them into a [Runtime]; a [Session] holds one
// actor's capabilities, counters and activated tools; [Session.Call]
// checks, bounds, runs and audits a call, and [Session.Start] does the
// same without waiting for it.
//
// The order of checks in [Session.Call] is fixed: lookup (not_found), effect
// granted by a held capability (denied), input bytes and call budget
// (limit), arguments valid against the tool's JSON Schema (invalid_input),
// the handler under the policy's deadline, the output bound (limit, never
// truncation), and an audit event. An untrusted session receives a generic
// message for io and internal failures; the detail goes to the host's log.
//
// What the kernel does not do: it does not check scope (which root or
// resource an argument names); handlers do that through
// [capability.Set.Covers], because only they know what an argument means.
// Failures are [fault.Error] values; bounds default to the constants of
// package limits.
//
// Two parts of the call path are written for speed, each beside what it
// replaces: the handler's context (callctx.go) is the caller's with the
// policy's deadline, which the waiting caller already watches, so a call
// makes no timer or registration with its parent as
// context.WithDeadline would; and handlers run on workers that outlive a
// call (workers.go, an internal/workpool), keeping their grown stacks,
// with an idle timer that is not reset per job. Both are measured by BenchmarkKernelCall, and at
// the MCP level by serve/mcpserver's BenchmarkStdioSmallCall
// (bench/RESULTS.md).
package kernel
