// Package textarchive keeps what an agent read (documents, files, fetched
// pages) as exact versions that later answers can cite and an operator
// can back up, restore, migrate and audit.
//
// An archive root is a directory the host chooses: one SQLite database
// (archive.db, WAL, synchronous=FULL) holding collections, items,
// versions, their parts' text and the lexical index of current versions
// (search/lexindex's engine, embedded in the same database so a version
// and its index entries commit together), and content-addressed blobs
// (blobs/AB/ABCD…, named by their SHA-256, stored once). Nothing is
// shared outside the root; nothing in it is executed or published
// elsewhere.
//
// What it guarantees:
//
//   - Exact versions. A version never changes once committed and is never
//     removed; a new one is added beside it. The same request identity
//     with the same content returns the same version; with other content
//     it fails with fault.Conflict. A version's digest is the SHA-256 of
//     its canonical manifest (RFC 8785 JSON of its parts' SHA-256, labels,
//     title, source, blob and receipt), and every version is a link of a
//     hash chain in the journal's framing (store/journal), whose head the
//     database holds.
//   - Crash safety. A crash (SIGKILL, power loss) at any step of an add
//     leaves the archive as before or as after; at most a staged blob is
//     left, which the archive records before it publishes it and cleanup
//     removes.
//   - Checkable integrity. Audit re-hashes every blob, every part's text,
//     every manifest and the chain, checks the index against the stored
//     text and runs SQLite's integrity check, and names each damaged
//     object; Rebuild repairs what a verified copy allows.
//
// What it does not guarantee: that a source says what is true, that the
// caller may keep or quote it, or that a page's labels, methods and
// warnings (the caller's) are right. Titles, names and text are untrusted
// data wherever they are shown. A process that writes the root's files
// itself bypasses every rule here; Audit detects what it changed, not who.
//
// The archive's own code is hand-written over modernc.org/sqlite, the
// lexical index engine and the journal's framing: no maintained module
// keeps versioned, citable, audited text with these bounds. A backup is a
// tar stream whose headers archive/tar formats and whose padding and end
// blocks are written by hand, because its entries' data is copied by the
// kernel (copy_file_range) and then read back to be hashed, and
// archive/tar's Writer accounts only for bytes passed through its Write
// (see tarWriter); tar_test.go reads that framing back with archive/tar
// and GNU tar at its edges.
package textarchive
