package semindex

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// benchChunks is the corpus of BenchmarkRank: CAPKIT_BENCH_SEM_CHUNKS
// (bench/semantic.sh sets 200,000) or a quick default.
func benchChunks() int {
	if n, err := strconv.Atoi(os.Getenv("CAPKIT_BENCH_SEM_CHUNKS")); err == nil && n > 0 {
		return n
	}
	return 20_000
}

const benchDim = 384

func fillVectors(b *testing.B, ix *Index, n int) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	err := ix.write(ctx, func(tx *sql.Tx) error {
		for ref := 0; ref*200 < n; ref++ {
			res, err := tx.ExecContext(ctx, `INSERT INTO refs(ref, digest, text_sha256, chars, chunks) VALUES(?, 'd', 'd', 0, 200)`, "ref"+strconv.Itoa(ref))
			if err != nil {
				return err
			}
			id, _ := res.LastInsertId()
			rows := make([]chunkRow, min(200, n-ref*200))
			for c := range rows {
				v := make([]float32, benchDim)
				for i := range v {
					v[i] = float32(r.NormFloat64())
				}
				rows[c] = chunkRow{start: c, end: c + 1, pieces: 1, vec: v}
			}
			if err := storeChunks(ctx, tx, id, rows); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ix.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRank is the exact cosine scan inside SQLite: every chunk
// scored, the best 10 returned.
func BenchmarkRank(b *testing.B) {
	n := benchChunks()
	ix, err := Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	fillVectors(b, ix, n)
	q := make([]float32, benchDim)
	for i := range q {
		q[i] = float32(i%13) - 6
	}
	o := &SearchOptions{}
	if _, err := ix.rank(context.Background(), q, o, 10); err != nil { // warm the page cache
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := ix.rank(context.Background(), q, o, 10)
		if err != nil || res.Scanned != int64(n) {
			b.Fatal(res, err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "chunks/s")
}

func BenchmarkCosine(b *testing.B) {
	v := encodeVector(make([]float32, benchDim))
	q := make([]float32, benchDim)
	for i := range q {
		q[i] = 1
	}
	for b.Loop() {
		cosine(v, q, 1)
	}
}
