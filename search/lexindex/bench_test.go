package lexindex

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The benchmarks read their documents from files bench/search.sh writes
// (one document per line): CAPKIT_LEX_BENCH_ADD (documents to add) and
// CAPKIT_LEX_BENCH_CORPUS (the corpus a ranked query runs over, indexed
// once into CAPKIT_LEX_BENCH_DB). CAPKIT_LEX_BENCH_QUERY is the query.

func benchDocs(b *testing.B, env string) []string {
	b.Helper()
	path := os.Getenv(env)
	if path == "" {
		b.Skip("set " + env + " (bench/search.sh does)")
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var docs []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		docs = append(docs, sc.Text())
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return docs
}

func addBatch(docs []string) []Mutation {
	m := make([]Mutation, len(docs))
	for i, d := range docs {
		m[i] = Mutation{Ref: fmt.Sprintf("doc-%06d", i), Text: d}
	}
	return m
}

// BenchmarkAdd adds every document in one batch to a new index.
func BenchmarkAdd(b *testing.B) {
	docs := benchDocs(b, "CAPKIT_LEX_BENCH_ADD")
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "add.db")
		ix := must(Open(ctx, path, &Options{Create: true}))
		batch := addBatch(docs)
		b.StartTimer()
		if _, err := ix.Apply(ctx, batch); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		ix.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(len(docs)), "docs/op")
}

// BenchmarkRawAdd inserts the same documents into a bare FTS5 table
// through the same driver, in one transaction, with the same pragmas.
func BenchmarkRawAdd(b *testing.B) {
	docs := benchDocs(b, "CAPKIT_LEX_BENCH_ADD")
	for b.Loop() {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "raw.db")
		db := must(sql.Open("sqlite", dsn(path, "rwc")))
		db.SetMaxOpenConns(1)
		must(db.Exec(`CREATE VIRTUAL TABLE fts USING fts5(body)`))
		b.StartTimer()
		tx := must(db.Begin())
		st := must(tx.Prepare(`INSERT INTO fts(rowid, body) VALUES (?1, ?2)`))
		for i, d := range docs {
			must(st.Exec(i+1, d))
		}
		st.Close()
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(len(docs)), "docs/op")
}

// corpusIndex opens CAPKIT_LEX_BENCH_DB, indexing the corpus first if it
// does not exist.
func corpusIndex(b *testing.B) (*Index, string) {
	b.Helper()
	path := os.Getenv("CAPKIT_LEX_BENCH_DB")
	if path == "" {
		b.Skip("set CAPKIT_LEX_BENCH_DB (bench/search.sh does)")
	}
	ctx := context.Background()
	if _, err := os.Stat(path); err != nil {
		ix := must(Open(ctx, path, &Options{Create: true}))
		must(ix.Apply(ctx, addBatch(benchDocs(b, "CAPKIT_LEX_BENCH_CORPUS"))))
		ix.Close()
	}
	return must(Open(ctx, path, nil)), path
}

// BenchmarkSearch ranks the corpus for the query (terms mode, 20 hits).
func BenchmarkSearch(b *testing.B) {
	ix, _ := corpusIndex(b)
	defer ix.Close()
	q := Query{Text: os.Getenv("CAPKIT_LEX_BENCH_QUERY")}
	ctx := context.Background()
	for b.Loop() {
		if _, err := ix.Search(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawSearch runs the same ranked query as bare SQL on the same
// database: MATCH … ORDER BY bm25() LIMIT 20, reading rowid and score.
func BenchmarkRawSearch(b *testing.B) {
	ix, path := corpusIndex(b)
	ix.Close()
	match := must(termsQuery(os.Getenv("CAPKIT_LEX_BENCH_QUERY")))
	db := must(sql.Open("sqlite", dsn(path, "ro")))
	defer db.Close()
	st := must(db.Prepare(`SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ?1 ORDER BY bm25(fts) LIMIT 20`))
	for b.Loop() {
		rows := must(st.Query(match))
		for rows.Next() {
			var id int64
			var score float64
			if err := rows.Scan(&id, &score); err != nil {
				b.Fatal(err)
			}
		}
		rows.Close()
	}
}
