// Package fixedfiles exposes a reviewed, fixed set of local text files to
// models and scripts under opaque identifiers. It is not a filesystem API:
// there is no listing, globbing, metadata, handle, write access or way to
// name a path.
//
// During trusted setup the host adds each file to a Builder under an
// identifier matching IDPattern. InsertPath opens the path once and keeps
// the descriptor; InsertOpen takes a file the host opened and verified
// itself. Build turns the Builder into a Catalog, which has no method that
// adds, removes or replaces an entry: once built (and registered as a tool
// with RegisterTool), the set of entries is fixed at compile time.
//
// What a Catalog guarantees: reads never consult a path again, so renaming,
// replacing or swapping a symlink at the path after insertion does not
// change which file is read (identity is pinned); only regular files are
// admitted (directories, FIFOs, sockets and devices are refused at insert,
// and a FIFO cannot hang setup because the open is non-blocking); a read
// returns the whole file or fails: over the byte bound, invalid UTF-8 and
// I/O errors are failures, never truncation or substitution; reads are
// positioned (pread), so any number of goroutines may read at once.
//
// What it does not guarantee: content is not pinned. Anyone who can write
// the file after setup changes what later reads return; select immutable or
// trusted files when that matters, and treat mutable content as untrusted
// input. The byte bound is not a time bound: a file on a slow or remote
// filesystem can still block a read (the kernel abandons a tool call at its
// deadline, but the read itself continues). InsertPath follows symlinks in
// the path the host chose, once, at setup: the host picked the path, and
// common deployments (mounted configuration volumes) are symlinks. A host
// that must not follow them opens the file itself with its own policy and
// uses InsertOpen.
//
// The host-side API (Builder, Catalog.Read) returns detailed *fault.Error
// values naming identifiers and paths, for trusted logs. The model-facing
// tool (RegisterTool) turns every failure into one generic message.
package fixedfiles
