// Package trail keeps the audit trail as a file of hash-chained JSON
// lines, and verifies and reads it.
//
// # Format
//
// Each line is a record in store/journal's framing:
//
//	{"seq":N,"prev":"P","hash":"H","event":E}
//
// where E is the event in canonical JSON (package audit), P the hash of
// the record before and H the SHA-256 of the record's number, P and E
// (journal.EncodeRecord says exactly how). So a line that was changed
// fails its own hash, and a line removed, inserted or moved breaks the
// numbering or the chain at the line after it; Verify names the first
// such line. What the chain alone cannot show is lines cut from the end:
// compare the head (last number and hash) Verify reports with one kept
// elsewhere (the PostgreSQL store holds every event too).
//
// # Writers and rotation
//
// Several processes may append to one trail: each append holds an
// exclusive flock(2) on FILE.lock, and a writer that finds the file grown
// since its own last append reads the last record again to chain after
// it. An append is one write(2) in O_APPEND mode (not synced: the trail
// survives a process crash, as the file the JSON handler wrote did, not
// a power loss); a short write is truncated away.
//
// When the next record would take the file past its bound
// (Options.MaxBytes), the writer renames it to FILE.<UTC time> and starts
// a new FILE whose first record continues the numbering and chains to
// the last record of the one before: a rotated file begins where its
// predecessor ended, and Verify given the files in order checks the
// links between them. The lock file keeps the last record's number and
// hash across a rotation, so a writer in another process continues the
// chain in the new file.
//
// A trail that does not end in a record when a writer first appends (one
// written as plain JSON lines by an older capkit, or ending mid-line) is
// moved aside as FILE.<UTC time>.unchained, untouched, and a new chain
// starts with a record naming it and why: the calls go on being audited,
// and audit verify judges the old file. The one end that is repaired in
// place is what a writer killed mid-write leaves: part of the record
// after the last one (its number next, chained to it), cut away, as its
// call never returned.
//
// Hand-written on store/journal's framing because the journal itself is
// one bounded file in a private directory, synced on every append:
// the audit trail is an unbounded sequence of files in a log directory,
// appended to on every call.
package trail
