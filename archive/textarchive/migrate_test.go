package textarchive

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
)

// The fixtures: testdata/schema-N.db is an archive's database made by the
// code of schema N (fixtureDocs, by writeFixture), kept for every schema
// version committed. TestWriteFixture makes the current one when
// CAPKIT_TEXTARCHIVE_WRITE_FIXTURE is set.

var fixtureDocs = []struct{ item, request, text string }{
	{"a", "ra1", "The first fixture text: e\u0301, 👨‍👩‍👧 and\r\nCRLF."},
	{"a", "ra2", "The second version of item a."},
	{"b", "rb1", "Item b's only text."},
}

func writeFixture(t *testing.T, a *Archive) {
	for _, d := range fixtureDocs {
		addText(t, a, "fixture", d.item, d.request, Document{Parts: []Part{{Text: d.text, Page: "1", Method: "fixture"}}, Title: "fixture " + d.item})
	}
}

func TestWriteFixture(t *testing.T) {
	if os.Getenv("CAPKIT_TEXTARCHIVE_WRITE_FIXTURE") == "" {
		t.Skip("set CAPKIT_TEXTARCHIVE_WRITE_FIXTURE to write testdata/schema-N.db for the current schema")
	}
	a := newArchive(t)
	writeFixture(t, a)
	out := filepath.Join("testdata", "schema-"+strconv.Itoa(schemaVersion)+".db")
	os.MkdirAll("testdata", 0o755)
	if _, err := a.conn.ExecContext(context.Background(), `VACUUM INTO ?1`, out); err != nil {
		t.Fatal(err)
	}
	db, conn := must2(openDB(context.Background(), out, "rw"))
	conn.ExecContext(context.Background(), `PRAGMA journal_mode = DELETE`)
	conn.Close()
	db.Close()
}

func must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(err)
	}
	return a, b
}

// rootFrom makes an archive root holding a copy of the fixture database.
func rootFrom(t *testing.T, fixture string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "archive")
	if err := os.MkdirAll(filepath.Join(dir, blobsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, dbName), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkFixture holds a migrated fixture to what it was made with.
func checkFixture(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	a, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for i, d := range fixtureDocs {
		c := cite(t, a, versionRef(int64(i+1)), 0, 0, int64(len([]rune(d.text))))
		if c.Citation.Quote.Exact != d.text || c.Citation.Item != d.item {
			t.Fatalf("v%d after the migration: %+v", i+1, c.Citation)
		}
	}
	if hits := must(a.Search(ctx, SearchQuery{Text: "second"})); len(hits.Hits) != 1 {
		t.Fatalf("the migrated index: %+v", hits)
	}
	r := must(a.Audit(ctx, AuditOptions{}))
	if !r.Clean() {
		t.Fatalf("audit after the migration: %+v", r.Problems)
	}
}

// TestMigrateFixtures migrates each kept schema version's fixture to the
// current schema.
func TestMigrateFixtures(t *testing.T) {
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "schema-*.db"))
	if len(fixtures) < schemaVersion {
		t.Fatalf("%d fixtures for schema %d: each schema version committed keeps one", len(fixtures), schemaVersion)
	}
	for _, fx := range fixtures {
		t.Run(filepath.Base(fx), func(t *testing.T) {
			from, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(fx), "schema-"), ".db"))
			dir := rootFrom(t, fx)
			m, err := Migrate(context.Background(), dir)
			if err != nil || m.From != from || m.To != schemaVersion {
				t.Fatalf("migrate: %+v %v", m, err)
			}
			checkFixture(t, dir)
		})
	}
}

// withSchema2 adds a migration to a schema 2 for the test: the harness a
// real second schema will use.
func withSchema2(t testing.TB) {
	old, oldVersion := migrations, schemaVersion
	migrations = append(append([]migration{}, migrations...), migration{from: 1, run: func(t *txn) error {
		return t.exec(`CREATE TABLE schema2_test(x INTEGER)`)
	}})
	schemaVersion = 2
	t.Cleanup(func() { migrations, schemaVersion = old, oldVersion })
}

func TestMigrateToNext(t *testing.T) {
	withSchema2(t)
	ctx := context.Background()
	dir := rootFrom(t, filepath.Join("testdata", "schema-1.db"))
	_, err := Open(ctx, dir)
	if fault.CodeOf(err) != fault.InvalidInput || !strings.Contains(err.Error(), "migrate") {
		t.Fatalf("opening a schema-1 archive at schema 2: %v", err)
	}
	m := must(Migrate(ctx, dir))
	if m.From != 1 || m.To != 2 || m.Retained != "retained/archive-schema-1.db" {
		t.Fatalf("%+v", m)
	}
	checkFixture(t, dir)
	if again := must(Migrate(ctx, dir)); again.From != 2 || again.To != 2 {
		t.Fatalf("a second migration: %+v", again)
	}
	// The original is kept, at its schema.
	kept := filepath.Join(dir, m.Retained)
	db, conn := must2(openDB(ctx, kept, "rw"))
	var v string
	conn.QueryRowContext(ctx, `SELECT value FROM archive_meta WHERE key = 'schema'`).Scan(&v)
	conn.Close()
	db.Close()
	if v != "1" {
		t.Fatalf("the retained original is at schema %q", v)
	}
	// A new archive is made as a migrated one is.
	a := newArchive(t)
	var n int
	a.read(ctx, "test", func(tx *txn) error {
		return tx.row(`SELECT count(*) FROM sqlite_schema WHERE name = 'schema2_test'`).Scan(&n)
	})
	if n != 1 {
		t.Fatal("Init did not apply the migration")
	}
}

func TestMigrateRefusesNewer(t *testing.T) {
	a := newArchive(t)
	tamper(t, a, `UPDATE archive_meta SET value = '99' WHERE key = 'schema'`)
	a.Close()
	_, err := Migrate(context.Background(), a.dir)
	wantCode(t, err, fault.InvalidInput)
	_, err = Open(context.Background(), a.dir)
	wantCode(t, err, fault.InvalidInput)
}
