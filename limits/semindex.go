package limits

import "time"

// Semantic index and its BERT encoder.
const (
	// SemWindow is the model's window in positions: [CLS], at most
	// SemChunkPieces word pieces of text, [SEP].
	SemWindow      = 256
	SemChunkPieces = SemWindow - 2
	// SemSourceMaxBytes bounds one indexed source (UTF-8 text).
	SemSourceMaxBytes = 4 * MiB
	// SemRefMaxBytes and SemScopeNameMaxBytes bound caller references and
	// scope names.
	SemRefMaxBytes       = 1 * KiB
	SemScopeNameMaxBytes = 256
	// SemSearchDefaultHits and SemSearchMaxHits bound ranked hits.
	SemSearchDefaultHits = 10
	SemSearchMaxHits     = 1_000
	// SemScopeMaxRefs bounds the refs one scope call names (a scope may
	// grow across calls without a ceiling).
	SemScopeMaxRefs = 100_000
	// SemBlockVectors is how many chunk vectors one stored block holds:
	// a search reads and scores a block per SQL function call.
	SemBlockVectors = 512
	// SemPageBytes is the index's database page size, SQLite's largest:
	// a block is read one page at a time.
	SemPageBytes = 64 * KiB
	// SemScanParts bounds how many connections (and cores) one search
	// splits its scan across.
	SemScanParts = 4
	// SemCacheBytes is the default bound of the vector blocks an open
	// index keeps in memory between searches (about 350,000 vectors of
	// 384 dimensions); SemMaxCacheBytes bounds any setting.
	SemCacheBytes    = 512 * MiB
	SemMaxCacheBytes = 64 * GiB
	// SemHeldIndexes bounds the indexes the semindex tools keep open
	// between calls (their caches share one SemCacheBytes), and
	// SemHeldIdle is how long one stays open unused.
	SemHeldIndexes = 4
	SemHeldIdle    = 2 * time.Minute
)

// Model files. A model is validated against these before anything sized by
// it is allocated.
const (
	ModelMaxWeightsBytes   = 2 * GiB
	ModelMaxHeaderBytes    = 16 * MiB
	ModelMaxConfigBytes    = 1 * MiB
	ModelMaxTokenizerBytes = 64 * MiB
	ModelMaxTensors        = 10_000
	ModelMaxHidden         = 4_096
	ModelMaxLayers         = 48
	ModelMaxHeads          = 128
	ModelMaxIntermediate   = 16_384
	ModelMaxPositions      = 8_192
	ModelMaxVocab          = 1 << 20
	ModelMaxTypeVocab      = 16
	// ModelMaxWordChars bounds the tokenizer's max_input_chars_per_word.
	ModelMaxWordChars = 1_000
	// ModelMaxPieceBytes bounds one vocabulary entry.
	ModelMaxPieceBytes = 1 * KiB
)
