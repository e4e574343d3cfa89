// Package journal keeps append-only journals of arbitrary JSON events, one
// file per journal under an explicit private directory, in a framing where
// every record carries a hash of its own content and of the record before
// it, so a reordered, deleted, inserted or edited record is detected.
//
// # Format
//
// A journal named NAME is the file NAME.jsonl in its directory (NAME.lock
// beside it serialises writers). It holds records, one per line, each line
// ending in a single "\n" (0x0A). Record number N (N = 1, 2, ...) is exactly
// these bytes, with no other whitespace:
//
//	{"seq":N,"prev":"P","hash":"H","event":E}\n
//
// where
//
//   - N is the decimal record number, without leading zeros;
//   - E is the event in canonical form: RFC 8785 (JSON Canonicalization
//     Scheme) as implemented by jsontext.Value.Canonicalize — members sorted,
//     no whitespace, minimal string escapes, numbers in ECMAScript form;
//   - P is H of record N-1, or 64 "0" digits for record 1;
//   - H is the lowercase hex SHA-256 of the bytes
//     "capkit.journal.v1\n" + N + "\n" + P + "\n" + E
//     (N in decimal, P as its 64 hex digits, E as written in the line).
//
// So each record's hash binds its number, its predecessor and its event;
// the record text is fully determined by those three, and Verify checks the
// text byte for byte. An independent verifier needs only SHA-256 and a JCS
// implementation.
//
// Events are refused (invalid_input) when they are not one valid JSON value,
// hold duplicate object member names or invalid UTF-8, nest deeper than
// limits.JournalMaxDepth, or hold a number that canonical form would change
// in value: outside the float64 range (non-finite), or with more precision
// than float64 keeps (write such numbers as strings). The canonical event
// is at most limits.JournalMaxEventBytes (64 KiB); a journal at most
// limits.JournalMaxJournalBytes (32 MiB).
//
// # Guarantees
//
// Append returns only after its record is written with one write(2) in
// O_APPEND mode and fdatasync'd: a record whose Append returned survives a
// crash. Appends are serialised by an exclusive flock(2) on NAME.lock
// (across processes) and a mutex (within one Journal). A crash mid-append
// can leave an incomplete last line; Verify reports it (ErrIncompleteTail)
// and Append refuses to write after it. It is never removed silently:
// Repair, called explicitly, truncates an incomplete last line and nothing
// else.
//
// What the chain does not guarantee: it detects changes inside the journal,
// not the removal of whole records from its end, nor the replacement of the
// whole file. To detect those, keep the Head hash and record count that
// Verify and Append report somewhere the journal's writer cannot change.
//
// The directory must be private: owned by the process's user, with no
// group or other permissions (mode 0700). Files are created 0600 and never
// through a symlink. Linux only: locking and syncing use flock(2) and
// fdatasync(2).
//
// Hand-written because no maintained Go module offers a hash-chained,
// canonical-JSON, crash-reporting append-only log with these bounds.
package journal
