package limits

// Literal passages (search/passages).
const (
	// PassagesMaxSourceBytes bounds one source.
	PassagesMaxSourceBytes = 128 * MiB
	// PassagesMaxMatches bounds the matches one search returns; the total
	// it reports is never capped.
	PassagesMaxMatches = 1_000
	// PassagesDefaultMatches is what a zero limit means.
	PassagesDefaultMatches = 100
	// PassagesMaxQueryBytes bounds the literal searched for.
	PassagesMaxQueryBytes = 1 * KiB
	// PassagesContextRunes is the context shown on each side of a match,
	// in code points, never past the match's region.
	PassagesContextRunes = 40
	// PassagesMaxRegionsBytes bounds the JSON regions file the CLI reads
	// (the model-facing tool's regions are bounded by its input bound).
	PassagesMaxRegionsBytes = 64 * MiB
)

// Caller-owned lexical index (search/lexindex).
const (
	// LexMaxDocumentBytes bounds one document's UTF-8 text.
	LexMaxDocumentBytes = 8 * MiB
	// LexMaxHits bounds the hits one search returns.
	LexMaxHits = 1_000
	// LexDefaultHits is what a zero limit means.
	LexDefaultHits = 20
	// LexMaxRefBytes bounds an opaque document reference and a scope name.
	LexMaxRefBytes = 1 * KiB
	// LexMaxDigestBytes bounds a caller's digest.
	LexMaxDigestBytes = 256
	// LexMaxQueryBytes bounds a search query.
	LexMaxQueryBytes = 4 * KiB
	// LexMaxQueryDepth bounds the nesting of parentheses in an explicit
	// FTS5 query, below the depth SQLite's parser accepts.
	LexMaxQueryDepth = 16
	// LexMaxStatusRefs bounds the refs one status call reports.
	LexMaxStatusRefs = 1_000
	// LexSnippetTokens is the length of a snippet, in tokens.
	LexSnippetTokens = 24
	// LexToolInputBytes is the input bound of lexindex_update: a full
	// document escaped as JSON at worst (six bytes, \u003c, per byte),
	// with room for its fields.
	LexToolInputBytes = 6*LexMaxDocumentBytes + 64*KiB
	// LexMaxBatchReadBytes bounds the documents one lexindex_update batch
	// reads from paths, as LexToolInputBytes bounds those it is given.
	LexMaxBatchReadBytes = 6 * LexMaxDocumentBytes
)
