// Package fileio reads, digests and copies one regular file named by an
// explicit absolute path, within an explicit byte bound.
//
//   - ReadFile returns a whole file of at most limits.FileBufferedMaxBytes
//     (128 MiB) bytes.
//   - Digest streams a file through SHA-256 within a byte budget the
//     caller states (up to math.MaxInt64).
//   - Copy streams a file into a new private file within a byte budget.
//
// What every operation guarantees:
//
//   - The last path element is never followed if it is a symbolic link
//     (O_NOFOLLOW; refused with fault.Denied). Elements before it are the
//     host's: a host path such as /var/run/x may pass through symlinks.
//     The model-facing tools resolve paths in a scope (internal/scope),
//     so no element leads out of a granted root.
//   - Regular files only: directories, FIFOs, sockets and devices are
//     refused with fault.InvalidInput before they are opened; the open
//     itself uses O_NONBLOCK, so a FIFO swapped in never blocks.
//   - Stable metadata: the file's identity, link count, size, mode,
//     modification and change times are taken with fstat at open and
//     again after the last byte; a file that grew, shrank, changed or was
//     replaced at its path meanwhile fails with
//     fault.Integrity (ErrChanged) and no bytes, digest or copy are
//     returned: never a mix of old and new content.
//   - Copy never overwrites: it writes a 0600 temporary file in the
//     destination's directory, fsyncs it, and publishes it under the
//     destination name with renameat2 RENAME_NOREPLACE (an existing
//     destination fails with fault.Conflict, even one created during the
//     copy), then fsyncs the directory. The destination appears complete
//     or not at all; it stays private (0600).
//
// What it does not guarantee: the stability check sees what fstat sees. A
// writer that rewrites a file in place with the same size within one tick
// of the filesystem's timestamp clock (a few milliseconds on Linux) and
// restores nothing else can go unnoticed; a file that must not change
// needs to be private to its owner. A crash during Copy can leave a
// staging file (internal/atfile's reserved namespace: never served, and
// removed by the next writer in that directory or capkit clean) in the
// destination's directory, never a partial destination. Hard links are not refused: a hard link
// is the file itself.
//
// Linux only. Elsewhere every operation fails with fault.Unavailable
// rather than use path-based calls that could follow a swapped symlink.
//
// The package is hand-written over golang.org/x/sys/unix (through
// internal/scope) because no maintained module
// combines descriptor-relative no-follow opens, a before/after metadata
// check and no-replace publication; the copy itself is io.Copy on
// *os.File, which uses copy_file_range(2).
package fileio
