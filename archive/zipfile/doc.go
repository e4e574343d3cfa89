// Package zipfile creates ZIP archives from explicitly selected files and
// extracts archives whose members the caller already knows by SHA-256
// digest, into a directory that did not exist before.
//
// Extraction is exact: every member must be one the caller expected, every
// expected member must be present, and each must hash to its expected
// digest. What Extract guarantees:
//
//   - Nothing is written outside the new directory. Members are written
//     relative to a private staging directory's descriptor, element by
//     element without following a symlink (scope.Staged), so no name,
//     "..", absolute path or symlink can lead elsewhere; names are also
//     checked before anything is written (no absolute or ".." names, no
//     backslashes, no control characters, no drive letters, at most
//     limits.ZipMaxPathDepth elements).
//   - The destination appears complete or not at all. Members are written
//     and fsynced in a staging directory beside the destination (same
//     parent, so same filesystem) and published by renameat2 with
//     RENAME_NOREPLACE: an existing destination is never replaced, and a
//     failure removes the staging directory. A crash (power loss, SIGKILL)
//     can leave a staging directory named ".capkit-zip-*" in the parent,
//     never a partial destination.
//   - Bounds hold while inflating: declared sizes are checked first
//     (limits.ZipMaxMemberBytes per member, limits.ZipMaxTotalBytes in all)
//     and then enforced on the real stream, so a member whose data is
//     larger than it declares fails as soon as it passes the declaration.
//   - The central directory is bounded before archive/zip reads it:
//     archive/zip reads the whole directory into memory, so the
//     end-of-central-directory record's size and count are checked first
//     (limits.ZipMaxCentralDirectory, limits.ZipMaxFiles), and the reader
//     archive/zip is given fails once it has read more than the directory
//     allows, whatever the records claim.
//   - Refused outright: encrypted members, members that are not regular
//     files or directories (symlinks, devices, FIFOs, sockets, by their
//     external attributes), compression methods other than store and
//     deflate, duplicate names (including names equal after Unicode NFC
//     normalisation and case folding, and a name used both as a file and
//     as a directory), members whose data overlaps another's, multi-disk
//     and prefixed (self-extracting) archives.
//
// What it does not guarantee: member metadata (times, permissions, owners)
// is not restored; extracted files are private (0600, directories 0700)
// and the caller widens them if it must. Member names come from the central
// directory; local header names are ignored. It is Linux-only where it
// publishes: elsewhere publication fails with fault.Unavailable rather than
// use a rename that could replace the destination.
//
// Create reads each selected file with fileio's stable read (O_NOFOLLOW,
// regular files only, metadata compared before and after), fails with
// fault.Integrity (ErrChanged) if a file changes while it is read, writes the
// archive to a private temporary file in the destination's directory,
// checks the result with the same reader Extract uses, and publishes it
// without replacing anything.
//
// The ZIP format itself is archive/zip's; this package adds what
// archive/zip leaves to its callers (bounds before trust, exact-member
// policy, confined and atomic output), which no maintained module does.
package zipfile
