// Package audit is capkit's audit trail as its sinks and readers see it:
// the event (Event), the slog handler that turns the kernel's records into
// canonical events and hands them to every sink at once (Handler), and
// the questions a reader answers about a trail (Source: events newest
// first under a Filter, counts and percentiles, the chain's state).
//
// The sinks are packages beside this one: audit/trail (hash-chained JSON
// lines in a file, its verification, and a reader over it),
// audit/pgstore (a PostgreSQL store many hosts share, with a bounded
// local spool) and audit/telemetry (OpenTelemetry over OTLP/HTTP).
//
// # What an event holds, and never holds
//
// An event is what the kernel and the tools log: the actor, session and
// request; the tool, the outcome (ok or a fault code) and, for a denial or
// a limit, the policy that decided it and the calls left; bytes in and
// out; the duration; how a contained command was contained; and the
// shape of the arguments (each declared member's JSON type and length).
// Never an argument's value, a path, a pattern or any content: the kernel
// does not put them in the record, and nothing here adds them.
//
// # Canonical form
//
// Each event is encoded once, in the canonical JSON of RFC 8785 (members
// sorted, no whitespace, minimal escapes): the form store/journal's
// framing hashes, so every sink that chains its records (the file, the
// store) hashes the same bytes. An event is at most
// limits.AuditMaxEventBytes; a larger one is replaced by an event that
// says so (its message and size), never dropped.
package audit
