// Package host composes a capkit runtime from a configuration: it opens the
// audit and detail logs, registers every capability package's tools on one
// kernel.Builder with the configured per-tool policies, builds the runtime,
// and creates sessions for an actor with the capabilities the
// configuration derives for it. `capkit serve`, `capkit tools` and
// `capkit call` all go through it, so the same configuration means the same
// tools, policies and grants whichever way a tool is reached.
package host
