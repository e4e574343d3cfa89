// Package pgstore keeps the audit trail in a PostgreSQL store that many
// hosts share (audit_store), and reads it back for the dashboard.
//
// # Writing
//
// Each writing process is a stream (random id, and the host it runs on):
// its events are numbered and hash-chained per stream as the file trail is
// (store/journal's framing: each row holds the number, the previous
// hash, its own hash and the canonical event), and inserted in batches
// with ON CONFLICT (stream, seq) DO NOTHING, so an event sent twice (a
// batch retried after an answer was lost, a spool delivered again after
// a crash) is stored once.
//
// Write never waits for the network. Events wait in a bounded queue
// (limits.AuditQueueEvents) for the sender, which, woken by an event in
// an empty queue, waits limits.AuditStoreLinger for those that follow and
// inserts them together, up to limits.AuditBatchEvents at a time: one
// statement and one wake-up for the calls of that time, not one each. When the store cannot be
// reached, or answers with a failure, the sender keeps its batch and
// tries again (limits.AuditRetryMin doubling to AuditRetryMax), and
// events past the full queue are appended to a local spool, a file per
// stream in the spool directory, bounded by its size; once the store
// answers again the spool is delivered, oldest first, and removed. An
// event that fits neither is lost, and counted: Stats says how many, the
// detail log says when it begins, and once the store is back the count is
// handed to Options.Lost, which the host makes an audit event of its own
// (audit.MsgLost) that every sink records. A spool left by a process that
// ended (killed, or closed while the store was down) is delivered by the
// next process that reaches the store; each live process holds a lock on
// its own.
//
// What the queue held when a process is killed outright (SIGKILL) is
// lost with it: the sender empties it every limits.AuditStoreLinger
// while the store answers, and the file trail, written before the call
// returns, holds every event.
//
// # Reading
//
// Reader answers the dashboard's questions (audit.Source) with SQL over
// the same table, and verifies each stream's chain as it reads it.
package pgstore
