// Package local is the local-filesystem files.Provider: a thin layer over
// internal/scope, whose targets the file tools resolve. What the scope
// guarantees (no path out of its root, no change to a protected path,
// every change checked on the directory it is made through, a root
// acquired once and a target's parent opened once) holds for every call;
// local adds what the file tools' seam promises beyond it:
//   - Reads return regular files only (O_NOFOLLOW|O_NONBLOCK, checked
//     again with fstat), so a FIFO, socket or device is refused, never
//     blocked on or read; a final symlink is followed, one hop at a time
//     (at most limits.SymlinkMaxHops), only while it stays inside the root
//     (scope.Target.OpenFollowing). A file read through to its end knows
//     its version (files.Version).
//   - Listings and walks read names and types from the directories
//     themselves; a walk never follows a symlink (scope.Walk), and a tree
//     walk (files.TreeWalker) opens each directory inside its parent and
//     each file relative to the directory that listed it.
//   - Writes are scope.Target.Replace: the content goes to a staging file
//     in the same directory, is fsynced, then renamed over the target, and
//     the directory is fsynced; missing parent directories are made, each
//     checked. The file keeps its permission bits (and, where the process
//     may, its owner); a new file gets mode 0o644. A hard link to a file
//     outside the root is replaced by the rename, not written into.
//   - Guarded writes (files.WriteOptions.Guard) check the version and
//     rename under a lock keyed by (directory device, inode, name), shared
//     by every replacement in the process.
//   - Moves never replace anything (scope.Target.RenameTo) and move only
//     regular files and directories.
//
// What it does not guarantee: a process that writes the file directly,
// bypassing capkit, can still change it between the version check and the
// rename (there is no portable advisory lock every writer honours).
// Permission bits beyond 0o777 (setuid, setgid, sticky) are not carried
// over to the new content. Linux only (internal/scope).
package local

import (
	"github.com/capkit/capkit/files"
)

// Provider is the local-filesystem files.Provider. The zero value is
// ready; it holds nothing and is safe for concurrent use.
type Provider struct{}

var _ files.Provider = (*Provider)(nil)

// New returns a Provider.
func New() *Provider { return &Provider{} }

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}
