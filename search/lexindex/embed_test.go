package lexindex

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/capkit/capkit/fault"
)

// embedded opens a database with a table of its own and the index
// embedded beside it.
func embedded(t *testing.T) (*sql.Conn, *Tables, string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "owner.db")
	db, err := sql.Open("sqlite", dsn(path, "rwc"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn := must(db.Conn(ctx))
	t.Cleanup(func() { conn.Close() })
	must(conn.ExecContext(ctx, `CREATE TABLE owners_own(x INTEGER)`))
	must(conn.ExecContext(ctx, `BEGIN IMMEDIATE`))
	tables, err := Embed(ctx, conn, "test owner", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tables.Close)
	must(conn.ExecContext(ctx, `COMMIT`))
	return conn, tables, path
}

func TestEmbedded(t *testing.T) {
	ctx := context.Background()
	conn, tables, path := embedded(t)
	must(conn.ExecContext(ctx, `BEGIN IMMEDIATE`))
	must(tables.Apply(ctx, []Mutation{put("a/1", "red apple"), put("a/2", "green apple"), put("b/1", "red apple pie"), put("ab/1", "apple")}))
	must(conn.ExecContext(ctx, `INSERT INTO owners_own VALUES (1)`))
	must(conn.ExecContext(ctx, `COMMIT`))

	// A rolled-back change of the owner's rolls the index's back with it.
	must(conn.ExecContext(ctx, `BEGIN IMMEDIATE`))
	must(tables.Apply(ctx, []Mutation{put("a/3", "apple crumble")}))
	must(conn.ExecContext(ctx, `ROLLBACK`))

	must(conn.ExecContext(ctx, `BEGIN`))
	defer conn.ExecContext(ctx, `ROLLBACK`)
	all := must(tables.Search(ctx, Query{Text: "apple"}))
	if len(all.Hits) != 4 {
		t.Fatalf("hits %v (the rolled-back document is not there)", refs(all))
	}
	in := must(tables.Search(ctx, Query{Text: "apple", Prefix: "a/"}))
	if got := refs(in); !slices.Equal(sorted(got), []string{"a/1", "a/2"}) {
		t.Fatalf("prefix a/: %v", got)
	}
	first := must(tables.Search(ctx, Query{Text: "apple", Limit: 2}))
	rest := must(tables.Search(ctx, Query{Text: "apple", Limit: 2, Offset: 2}))
	if got := append(refs(first), refs(rest)...); !slices.Equal(got, refs(all)) {
		t.Fatalf("offset windows %v, whole %v", got, refs(all))
	}
	if err := tables.Check(ctx); err != nil {
		t.Fatal(err)
	}
	var seen []string
	n := must(tables.Entries(ctx, []string{"b/1", "nothing", "a/1"}, func(e Entry) error {
		seen = append(seen, e.Ref+"="+e.Text)
		return nil
	}))
	if n != 2 || !slices.Equal(seen, []string{"b/1=red apple pie", "a/1=red apple"}) {
		t.Fatalf("entries %v", seen)
	}
	_, err := Open(ctx, path, nil)
	if fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("Open of an embedded index: %v", err)
	}
}

func TestEmbeddedReset(t *testing.T) {
	ctx := context.Background()
	conn, tables, _ := embedded(t)
	must(conn.ExecContext(ctx, `BEGIN IMMEDIATE`))
	must(tables.Apply(ctx, []Mutation{put("x", "one two three")}))
	must(conn.ExecContext(ctx, `COMMIT`))
	// Damage the full-text index's own data.
	must(conn.ExecContext(ctx, `UPDATE fts_data SET block = zeroblob(length(block)) WHERE id > 10`))
	must(conn.ExecContext(ctx, `BEGIN`))
	err := tables.Check(ctx)
	conn.ExecContext(ctx, `ROLLBACK`)
	if fault.CodeOf(err) != fault.Integrity {
		t.Fatalf("check of a damaged index: %v", err)
	}
	must(conn.ExecContext(ctx, `BEGIN IMMEDIATE`))
	if err := tables.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	must(tables.Apply(ctx, []Mutation{put("x", "one two three")}))
	if err := tables.Check(ctx); err != nil {
		t.Fatal(err)
	}
	must(conn.ExecContext(ctx, `COMMIT`))
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
