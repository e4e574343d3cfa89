package textarchive

import "github.com/capkit/capkit/store/journal"

// formatName identifies an archive's database in archive_meta.
const formatName = "capkit-text-archive"

// schemaVersion is the schema this package reads and writes: schema 1
// and every migration after it, which Init applies too, so a new archive
// is made as a migrated one is. Each earlier version has a fixture made
// by the code of its time (testdata/schema-N.db), from which the tests
// migrate to this one.
var schemaVersion = 1 + len(migrations)

// genesisHead is the chain head of an archive without versions.
const genesisHead = "0 " + journal.Genesis

// schemaV1 is the schema of version 1.
//
// A version is never changed or removed once committed; an item's
// current version is its latest. Every version is a link of one hash
// chain (prev, hash: the journal's framing over the version's canonical
// record, see chain.go) whose head archive_meta holds. requests maps each
// request identity to the version it made or found. pending holds the
// blobs of operations between staging them and committing (cleanup's
// knowledge of what an interrupted operation left). fetches holds each
// retained fetch's operation: admitted before any request is sent, so a
// repeat after a crash knows an earlier request may have reached the
// server. The lexical index's tables (lexindex.Embed) sit beside these,
// holding the text of current versions only.
var schemaV1 = []string{
	`CREATE TABLE archive_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID`,
	`CREATE TABLE collections(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)`,
	`CREATE TABLE items(id INTEGER PRIMARY KEY, collection INTEGER NOT NULL REFERENCES collections(id),
		name TEXT NOT NULL, current INTEGER NOT NULL, versions INTEGER NOT NULL, UNIQUE(collection, name))`,
	`CREATE TABLE versions(id INTEGER PRIMARY KEY, item INTEGER NOT NULL REFERENCES items(id), seq INTEGER NOT NULL,
		kind TEXT NOT NULL, digest TEXT NOT NULL, title TEXT NOT NULL, source_url TEXT NOT NULL,
		name TEXT NOT NULL, media_type TEXT NOT NULL, blob TEXT, blob_bytes INTEGER NOT NULL,
		receipt TEXT NOT NULL, parts INTEGER NOT NULL, chars INTEGER NOT NULL, text_bytes INTEGER NOT NULL,
		request TEXT NOT NULL, created TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL, UNIQUE(item, seq))`,
	`CREATE INDEX versions_blob ON versions(blob) WHERE blob IS NOT NULL`,
	`CREATE TABLE parts(id INTEGER PRIMARY KEY, version INTEGER NOT NULL REFERENCES versions(id), idx INTEGER NOT NULL,
		text TEXT NOT NULL, sha256 TEXT NOT NULL, chars INTEGER NOT NULL, page TEXT NOT NULL, method TEXT NOT NULL,
		warnings TEXT NOT NULL, UNIQUE(version, idx))`,
	`CREATE TABLE requests(request TEXT PRIMARY KEY, kind TEXT NOT NULL, collection TEXT NOT NULL, item TEXT NOT NULL,
		digest TEXT NOT NULL, version INTEGER NOT NULL REFERENCES versions(id)) WITHOUT ROWID`,
	`CREATE TABLE pending(id INTEGER PRIMARY KEY, staging TEXT NOT NULL, blob TEXT NOT NULL, started TEXT NOT NULL)`,
	`CREATE TABLE fetches(request TEXT PRIMARY KEY, url TEXT NOT NULL, policy TEXT NOT NULL, collection TEXT NOT NULL,
		item TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL, uncertain INTEGER NOT NULL,
		started TEXT NOT NULL, updated TEXT NOT NULL, outcome TEXT NOT NULL, version INTEGER) WITHOUT ROWID`,
}

// migration turns the schema of version from into from+1 inside the
// migrating transaction.
type migration struct {
	from int
	run  func(t *txn) error
}

// migrations are the forward steps, in order; migrations[i].from is
// i+1. There are none yet: schema 1 is the first.
var migrations = []migration{}
