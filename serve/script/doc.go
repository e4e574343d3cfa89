// Package script runs workflows written in Starlark (go.starlark.net)
// inside a kernel session. A script sees exactly one way out:
// tool.call(name, arg), which goes through kernel.Session.Call, so the
// session's capabilities, budgets and audit apply exactly as they do to a
// model. Besides tool.call a script has the pure modules json and math;
// the host clock (module time) only when Options.AllowTime grants it.
// There is no load, no file, environment or network access, and no
// randomness.
//
// tool.call(name, arg=None, text=False): arg None means no arguments; a
// dict (or any JSON-able value) is passed as the JSON arguments; a string
// fills the tool's single required string field (the catalog tool's "id",
// say) and is refused by the kernel for a tool without one. The result is
// the tool's structured JSON result decoded to Starlark values, or its text
// when the tool returns no structured result or text=True is given. A
// failed call stops the script with the call's fault code and the message
// the session received (generic for untrusted sessions). Starlark cannot
// catch errors, so a script cannot probe and recover.
//
// Bounds, each a limit failure: steps (Options.MaxSteps), wall-clock time
// (Options.Timeout), the encoded size of the final value (MaxResultBytes)
// and memory (MaxMemoryBytes). go.starlark.net has no allocation limit of
// its own, and its maintainers' advice is a separate process; so the sound
// memory bound is a Worker: a child process that limits its own address
// space (RLIMIT_AS on Linux: what it has mapped at start plus
// 2×MaxMemoryBytes + 64 MiB, the collector's headroom) before reading the
// script, samples its heap every few hundred steps for a clean failure
// past MaxMemoryBytes, and is killed at the deadline even if a built-in is
// stuck in a long Go loop. A single allocation past the address-space
// limit kills the worker, which Run reports as limit. Without a Worker
// the script runs in the host's process: steps, time and result size are
// enforced the same way, but memory is only sampled (process-wide, every
// limits.ScriptMemoryCheckSteps steps), so one operation that allocates a
// lot at once ("x" * 500000000) is not stopped before it allocates, and a
// built-in stuck past the deadline is abandoned, not killed. Use a Worker
// for scripts from untrusted sources; capkit's CLI and MCP server do.
package script
