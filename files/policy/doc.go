// Package policy is the file tools' policy gate: it remembers, per
// session, the version of every file the session read, wrote or edited,
// and decides the write and edit expectations of package fs on that
// memory:
//
//   - an edit of a file the session has not read is refused (conflict);
//   - overwriting an existing file with a write needs a prior read too;
//     creating a new file does not (it is guarded to still not exist);
//   - a write or edit of a file whose version changed since the session
//     read it is refused (conflict), and nothing is written;
//   - otherwise the mutation is guarded by the version the session saw, so
//     a change that lands between the check and the write is refused by
//     the provider as well;
//   - a session's own successful write or edit updates what it observed,
//     so consecutive edits need no re-read.
//
// It participates only through files.Events: it has no service the tools
// call. Without it the tools still work, unconstrained.
//
// What it does not guarantee: observations are keyed by root and
// root-relative name, so a file reached by two names (a symlink, a hard
// link) counts as two files, which errs on the side of refusing. State
// lives as long as the session (kernel.Session.Local) and is not shared
// between sessions: each session must read a file itself.
package policy
