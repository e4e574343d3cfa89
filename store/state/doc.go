// Package state replaces private state files atomically and publishes
// staged directories without ever replacing an existing one, at explicit
// absolute paths.
//
// Replace guarantees that after a crash at any instant (SIGKILL, power
// loss) the state file holds either its old content or the new content
// in full, never a mix: it is internal/scope's one atomic replacement
// (a staging file in the same directory, fsynced, renamed over the state
// file, the directory fsynced). A new state file is private (0600); an
// existing one keeps its permission bits. An existing entry that is not a
// regular file (a symlink, a directory, a FIFO) is refused rather than
// replaced. The tool state_replace offers each replacement to the file
// policy's write gate (files.Events), as write_file does: a state file is
// no way around read-before-overwrite.
//
// Publish guarantees that the destination directory appears complete or
// not at all, and never replaces anything: it fsyncs every file and
// directory of the staged tree, then renames the staging directory onto
// the destination with renameat2 RENAME_NOREPLACE (scope.Target.RenameTo)
// and fsyncs the parent. Staging and destination must be in the same
// parent directory (so the rename is one atomic step on one filesystem);
// anything else is refused. Where RENAME_NOREPLACE is missing (another
// platform, an old kernel, a filesystem without it) Publish fails with
// fault.Unavailable rather than fall back to a rename that could replace
// a destination created meanwhile.
//
// What it does not guarantee: a crash can leave a staging file (in the
// reserved staging namespace, never served; the next writer in that
// directory or capkit clean removes it) beside a state file, or the
// caller's staging directory itself, which is never mistaken for the
// destination. Concurrent Replace calls
// on one file do not lose atomicity, but the last rename wins; callers
// that need read-modify-write must serialise themselves. The last path
// element is never followed if it is a symlink; elements before it are
// the host's (the model-facing tools resolve in a scope of the granted
// roots, internal/scope, and check the protected paths).
//
// Linux only; elsewhere every operation fails with fault.Unavailable.
//
// Written by hand over internal/scope: the
// maintained atomic-write module (github.com/google/renameio) works on
// path strings rather than an open directory (so it cannot confine itself
// to an os.Root), replaces whatever entry holds the name (a symlink
// included), and publishes no directories; no maintained module publishes
// without replacement.
package state
