// Package tree reports metadata of a path or a directory tree named by an
// explicit absolute path: a Stamp (type, size, permissions, modification
// and change times, inode; no content is read or hashed) of one entry,
// or the relative entries of a tree.
//
// What List guarantees:
//
//   - It never leaves the tree. It walks by opening each directory by name
//     inside its already open parent with O_NOFOLLOW (scope.Walk), so
//     no symlink is followed and no rename or swap elsewhere can redirect
//     it; a directory replaced during the walk fails with fault.Integrity.
//     Symbolic links and special files (FIFOs, sockets, devices) are left
//     out of the entries and counted (ExcludedSymlinks, ExcludedSpecial).
//   - Bounds are failures, never shorter lists: more than MaxEntries names
//     (default 10,000, listed or excluded), more than MaxBytes of regular
//     file sizes (default 1 GiB) or an entry deeper than MaxDepth (default
//     64) fails with fault.Limit.
//   - Entries are in a stable order: depth first, each directory's names
//     in byte order, a directory before its contents.
//
// What it does not guarantee: a tree that changes during the walk is
// listed as the walk found each directory, not as one instant's snapshot
// (an entry removed meanwhile is skipped); compare two listings or stamps
// to detect change. The root's own last element is not followed if it is
// a symlink; elements before it are the host's (scope.Host). The
// model-facing tools resolve paths in a scope of the granted roots
// (internal/scope).
//
// Linux only; elsewhere every operation fails with fault.Unavailable.
//
// Written by hand over internal/scope because filepath.WalkDir and
// io/fs walk by path strings, which a concurrent symlink swap can
// redirect out of the tree.
package tree
