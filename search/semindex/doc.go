// Package semindex is a caller-owned semantic index: a SQLite database the
// caller names (modernc.org/sqlite, pure Go, WAL) holding the sources of
// opaque caller references, their chunks and the chunks' embeddings from an
// explicit, pinned BERT model (package bert). A search embeds the query and
// ranks every chunk in scope by exact cosine similarity, computed inside
// SQLite by a registered function: there is no candidate list, no
// approximate index and no ceiling on how many chunks are scanned. Hits are
// spans: ref, character offsets, score.
//
// Vectors are stored in blocks (blocks.go) of up to limits.SemBlockVectors
// that the function scores a block per call; one search splits the blocks
// by id across a few connections reading one snapshot. An open Index keeps
// the blocks it searches in memory (cache.go), each under the version its
// row holds, so its later searches score the same bytes without reading
// them from the file.
//
// Chunks are runs of whole words of at most limits.SemChunkPieces word
// pieces, so that with [CLS] and [SEP] a chunk fills at most the model's
// window of limits.SemWindow positions. Offsets are Unicode code points of
// the source.
//
// Status answers from metadata only (model digest, counts, digests);
// Audit is the full check: it re-chunks and re-embeds every stored source
// and compares, checks every vector block against the chunks, and runs
// SQLite's integrity check.
package semindex
