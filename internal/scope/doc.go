// Package scope is how capkit reaches a file, the one way, as os.Root is
// for a directory tree. A Scope is made once per call from the roots the
// session's capabilities grant the call's effect and the host's protected
// set (capability.Protected). Scope.Resolve maps a caller's path onto one
// of those roots and returns a Target: the root, the root-relative name,
// and the name results show. The Target's methods are the operations:
// look at it, open it for reading (a regular file, a directory, a tree to
// walk), replace or create it, make it as a directory, rename it to
// another Target, build a new directory in its place, open its directory
// for changes to a few names, pin its directory for a database. A Target
// acquires its root once and opens its parent directory once, whatever is
// done with it. Host makes a Target of a host path for a caller the host
// trusts (the command line, a library caller).
//
// What it guarantees:
//   - No path leads out of its root. Resolve is lexical (no "..", no
//     absolute path outside every root, no control character, no staging
//     name); the directories on the way are opened through the root's
//     os.Root, which follows a symlink only while it stays inside; the
//     last element is opened, replaced or renamed relative to its
//     directory's descriptor without following a symlink, except by
//     OpenFollowing, which follows one a hop at a time while it stays
//     inside. A FIFO never blocks, nothing on a pseudo-filesystem is
//     touched and no staging name is served (internal/atfile).
//   - No change reaches a protected path (capability.Protected: .git,
//     capkit.toml and the host's [run] protect entries, of every root,
//     compared case-insensitively, so .GIT is .git). The check is this
//     package's alone: capability.Protected is the set.
//     Each change checks its name as spelled and, on the directory
//     descriptor it is then made through, as that directory is named on
//     disk now, so neither a symlink inside the root nor a directory
//     swapped for one after the first check leads it there; each missing
//     directory made on the way is checked so before it is made. The
//     checks are inside the operations: no caller can make a change
//     without them. A directory whose host path the kernel cannot name
//     (PATH_MAX bytes or more; no /proc) cannot be checked, so nothing is
//     changed in it (limit; unavailable without /proc).
//   - A replacement is atomic (staging file, fsync, rename: a reader or a
//     crash sees the old content or the new), and a rename or a new
//     directory never replaces an existing name (RENAME_NOREPLACE).
//   - A pinned directory (Target.Pin) is named by its descriptor, so a
//     library that opens files by path (SQLite: the database and every
//     file beside it) opens them in that directory whatever is renamed or
//     swapped on the way to it later.
//
// What it does not guarantee, or cover:
//   - That a file stays the same between two operations: a Target names a
//     path, not an inode (a reader that needs one version compares the
//     metadata, as fileio does). A Target opens its parent once and makes
//     every later change through that descriptor, so a directory renamed
//     after that is followed to where it went, as with os.Root.
//   - That a root is the directory at its path now: a root is opened and
//     checked once and then cached (limits.RootCacheEntries), so one moved
//     or replaced later is not followed until the process restarts.
//   - That a file read is not a hard link to one outside the roots (Linux
//     cannot tell). It is never written through: a replacement replaces
//     the link.
//   - Mount points inside a root are crossed, as os.Root crosses them
//     (mounts are the host's); only pseudo-filesystems (/proc, /sys and
//     the like) are refused wherever they are met.
//   - What another process does to a file directly; the container of a
//     contained command (run/sandbox) confines that command by mounts.
//   - A Host target is the host's own path: symlinks before its last
//     element are followed and no protected path is checked.
//   - A Scope holds nothing open and may be shared; a Target is for one
//     goroutine and must be closed.
//
// It is the one package besides internal/atfile, the descriptor-relative
// ground beneath it, that opens files: internal/archtest holds every
// other package to it.
package scope
