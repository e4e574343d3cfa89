// Package tabular scans untrusted delimited text into UTF-8 string rows:
// a CSV, a ZIP holding exactly one CSV, or a GZIP'd CSV, in the comma,
// pipe or tab dialect (detected or explicit), with an optional projection
// of named columns, a simple filter, and exact counts.
//
// What Scan guarantees:
//
//   - Bounds: compressed input at most limits.TabularMaxCompressedBytes,
//     plain or expanded text at most limits.TabularMaxExpandedBytes, counted
//     while streaming so a decompression bomb stops at the bound with
//     memory bounded by one record (limits.TabularMaxRecordBytes, a quoted
//     field spanning lines included); at most limits.TabularMaxColumns
//     columns; at most Options.MaxScanRows data rows (default
//     limits.TabularDefaultRows, explicit budgets up to
//     limits.TabularHardRows). A bound hit is a limit failure naming it,
//     never a partial result.
//   - Exact counts: rows scanned, rows matched by the filter, rows skipped
//     by Offset, rows returned, and, when the explicit row budget
//     (MaxRows) stops the output early, Truncated with the position of the
//     first matched row not returned. Truncation is a reported outcome; the
//     scan still reads every row so the counts are whole.
//   - Strings only: no field is converted, trimmed or re-typed.
//
// Documented handling of awkward input:
//
//   - The first record is the header; names select columns. A name that
//     appears twice in the header cannot be selected (invalid_input).
//   - Every row must have as many fields as the header: a ragged row is
//     invalid_input naming its line and both counts.
//   - Quoting follows RFC 4180 as encoding/csv implements it: a quoted
//     field may hold delimiters, doubled quotes and line breaks, kept
//     exactly ("\r\n" inside a quoted field stays "\r\n": see crlf.go); a
//     bare or unterminated quote is
//     invalid_input with line and column. Blank lines are skipped and not
//     counted.
//   - A UTF-8 byte order mark at the start is removed and reported
//     (Result.BOM); a UTF-16 byte order mark, and any field that is not
//     valid UTF-8, is invalid_input.
//   - A ZIP must hold exactly one file (directory entries are ignored) that
//     is neither encrypted nor a link; a ZIP or GZIP checksum mismatch is an
//     integrity failure.
//
// The delimited-text grammar is encoding/csv's and decompression is
// archive/zip's and compress/gzip's; this package adds the bounds, the
// format and dialect detection, the filter and the counts. The only bytes
// it parses itself are the ZIP end-of-central-directory record, read to
// refuse an archive listing many entries before archive/zip allocates one
// structure per entry.
package tabular
