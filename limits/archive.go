package limits

import "time"

// The text and file archive (archive/textarchive). The capability
// reference's bounds first, then those of this implementation.
const (
	// ArchiveMaxParts bounds the parts of one text document.
	ArchiveMaxParts = 1_000
	// ArchiveMaxTextBytes bounds the combined UTF-8 text of one document's
	// parts.
	ArchiveMaxTextBytes = 4 * MiB
	// ArchiveMaxFileBytes bounds one archived file (and one retained
	// fetched body).
	ArchiveMaxFileBytes = 128 * MiB
	// ArchiveMaxRecords bounds the records one list, versions or search
	// call returns.
	ArchiveMaxRecords = 100
	// ArchiveDefaultRecords is what a zero limit means.
	ArchiveDefaultRecords = 20
	// ArchiveMaxCiteChars bounds the characters (Unicode code points) one
	// citation returns.
	ArchiveMaxCiteChars = 16_384
	// ArchiveBackupMaxBytes is the default and the largest aggregate of a
	// backup or a restore: the database and every blob.
	ArchiveBackupMaxBytes = 20 * GiB
)

// The defaults of an archive source policy (format 1): what its absent
// fields mean. The fetch bounds are narrowed from limits.Fetch*; the
// window is a budget policy's.
const (
	ArchiveFetchResponseBytes      = 1 * MiB
	ArchiveFetchRequests           = 5
	ArchiveFetchRedirects          = 3
	ArchiveFetchDeadline           = 30 * time.Second
	ArchiveFetchWindow             = 60 * time.Second
	ArchiveFetchWindowRequests     = 10
	ArchiveFetchWindowBytes        = 8 * MiB
	ArchiveFetchMinIntervalSeconds = 0
)

// Bounds of this archive's own.
const (
	// ArchiveMaxNameBytes bounds a collection, item or request identity,
	// a fetch task and a file name.
	ArchiveMaxNameBytes = 256
	// ArchiveMaxTitleBytes bounds a document's title.
	ArchiveMaxTitleBytes = 1 * KiB
	// ArchiveMaxLabelBytes bounds a part's page label and method, and a
	// media type.
	ArchiveMaxLabelBytes = 128
	// ArchiveMaxWarnings bounds the warnings of one part;
	// ArchiveMaxWarningBytes one warning.
	ArchiveMaxWarnings     = 32
	ArchiveMaxWarningBytes = 512
	// ArchiveMaxDocumentJSONBytes bounds a PARTS.json file: the text's
	// bound escaped as JSON at worst (six bytes per byte), with room for
	// the rest.
	ArchiveMaxDocumentJSONBytes = 6*ArchiveMaxTextBytes + 1*MiB
	// ArchiveToolInputBytes bounds archive_add's arguments.
	ArchiveToolInputBytes = 6*ArchiveMaxTextBytes + 64*KiB
	// ArchiveMaxSearchOffset bounds a search's offset: ranks past it are
	// not kept.
	ArchiveMaxSearchOffset = 10_000
	// ArchiveMaxListOffset bounds a list's offset.
	ArchiveMaxListOffset = 1_000_000
	// ArchiveQuoteContextChars is the prefix and the suffix a citation's
	// quote selector keeps, in code points.
	ArchiveQuoteContextChars = 32
	// ArchiveMaxCitationBytes bounds a citation JSON file: the longest
	// quote escaped at worst, and its provenance.
	ArchiveMaxCitationBytes = 1 * MiB
	// ArchiveAuditMaxListed bounds the problems, and the notes, an audit
	// lists; it counts the rest.
	ArchiveAuditMaxListed = 1_000
	// ArchiveMaxManifestBytes bounds a backup's manifest.
	ArchiveMaxManifestBytes = 64 * KiB
	// ArchiveDefaultTimeout bounds one archive tool call.
	ArchiveDefaultTimeout = 2 * time.Minute
	// ArchiveSettleTimeout bounds recording a fetch's outcome after it.
	ArchiveSettleTimeout = 10 * time.Second
)
