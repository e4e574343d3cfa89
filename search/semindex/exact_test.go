package semindex

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

const exactDim = 16

// vectorIndex is an index of random vectors stored as the index stores
// them (storeChunks), refs of perRef chunks each, in blocks of bv.
func vectorIndex(t *testing.T, opts *OpenOptions, refs, perRef, bv int) *Index {
	t.Helper()
	blockVectors = bv
	t.Cleanup(func() { blockVectors = limits.SemBlockVectors })
	ix, err := Open(context.Background(), filepath.Join(t.TempDir(), "vec.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	rng := rand.New(rand.NewPCG(11, 12))
	for r := range refs {
		putRef(t, ix, "ref"+strconv.Itoa(r), perRef, rng)
	}
	return ix
}

// putRef stores ref with n random vectors, replacing what it held.
func putRef(t *testing.T, ix *Index, ref string, n int, rng *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	err := ix.write(ctx, func(tx *sql.Tx) error {
		if id, _, err := lookupRef(ctx, tx, ref); err != nil {
			return err
		} else if id != 0 {
			if err := deleteRef(ctx, tx, id); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO refs(ref, digest, text_sha256, chars, chunks) VALUES(?, 'd', 'd', 0, ?)`, ref, n)
		if err != nil {
			return err
		}
		id, _ := res.LastInsertId()
		rows := make([]chunkRow, n)
		for c := range rows {
			v := make([]float32, exactDim)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			rows[c] = chunkRow{start: c, end: c + 1, pieces: 1, vec: v}
		}
		return storeChunks(ctx, tx, id, rows)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// bruteForce ranks every stored vector (of the refs in scope, if not nil)
// by cosine computed in float64 from the stored float32 values, read
// straight from the blocks: the best k, best first, ties by chunk id.
func bruteForce(t *testing.T, ix *Index, q []float32, k int, scope []string) []scored {
	t.Helper()
	in := map[int64]bool{}
	rows, err := ix.db.Query(`SELECT c.id, r.ref FROM chunks c JOIN refs r ON r.id = c.ref_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var ref string
		if err := rows.Scan(&id, &ref); err != nil {
			t.Fatal(err)
		}
		in[id] = scope == nil || slices.Contains(scope, ref)
	}
	rows.Close()
	var all []scored
	blocks, err := ix.db.Query(`SELECT ids, vecs FROM vec_blocks`)
	if err != nil {
		t.Fatal(err)
	}
	defer blocks.Close()
	for blocks.Next() {
		b := &block{}
		if err := blocks.Scan(&b.ids, &b.vecs); err != nil {
			t.Fatal(err)
		}
		for i := range b.n() {
			if !in[b.chunkID(i)] {
				continue
			}
			v := decodeVector(b.vecs[4*exactDim*i : 4*exactDim*(i+1)])
			var dot, vv, qq float64
			for j := range v {
				dot += float64(v[j]) * float64(q[j])
				vv += float64(v[j]) * float64(v[j])
				qq += float64(q[j]) * float64(q[j])
			}
			all = append(all, scored{b.chunkID(i), dot / math.Sqrt(vv*qq)})
		}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if better(a, b) {
			return -1
		}
		return 1
	})
	return all[:min(k, len(all))]
}

// checkRank fails t unless a search of every vector in scope ranks as the
// brute force does: the same chunks in the same order, scores within
// float32 rounding, and every vector scored.
func checkRank(t *testing.T, what string, ix *Index, q []float32, k int, scope string, members []string) {
	t.Helper()
	res, err := ix.rank(context.Background(), q, &SearchOptions{Scope: scope}, k)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	want := bruteForce(t, ix, q, 1<<30, members)
	if res.Scanned != int64(len(want)) {
		t.Fatalf("%s: scanned %d vectors, %d in scope", what, res.Scanned, len(want))
	}
	want = want[:min(k, len(want))]
	var got []scored
	for _, h := range res.Hits {
		var id int64
		if err := ix.db.QueryRow(`SELECT c.id FROM chunks c JOIN refs r ON r.id = c.ref_id WHERE r.ref = ? AND c.cstart = ?`, h.Ref, h.Start).Scan(&id); err != nil {
			t.Fatal(err)
		}
		got = append(got, scored{id, h.Score})
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d hits, brute force %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Abs(got[i].score-want[i].score) > 1e-5 {
			t.Fatalf("%s: hit %d scores %.7f, brute force %.7f", what, i, got[i].score, want[i].score)
		}
		if got[i].id != want[i].id && !nearTie(want, i) {
			t.Fatalf("%s: hit %d is chunk %d (%.7f), brute force chunk %d (%.7f)", what, i, got[i].id, got[i].score, want[i].id, want[i].score)
		}
	}
}

// nearTie reports whether ranked[i] scores within float32 rounding of a
// neighbour, where the order may differ from the brute force's.
func nearTie(ranked []scored, i int) bool {
	for _, j := range []int{i - 1, i + 1} {
		if j >= 0 && j < len(ranked) && math.Abs(ranked[i].score-ranked[j].score) <= 1e-5 {
			return true
		}
	}
	return false
}

func randomQuery(rng *rand.Rand) []float32 {
	q := make([]float32, exactDim)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	return q
}

// TestRankExact: every search scores every vector and ranks as a brute
// force over all of them, whether the blocks come from the file or from
// the cache (first, second and later searches), after blocks are
// rewritten, removed and added, in a scope, with the cache bounded to a
// few blocks and without it.
func TestRankExact(t *testing.T) {
	for _, c := range []struct {
		name string
		opts *OpenOptions
	}{
		{"cache", nil},
		{"cache of 3 blocks", &OpenOptions{CacheBytes: 3 * 7 * (8 + 4*exactDim)}},
		{"no cache", &OpenOptions{DisableCache: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ix := vectorIndex(t, c.opts, 30, 13, 7)
			rng := rand.New(rand.NewPCG(13, 14))
			for i := range 4 {
				checkRank(t, fmt.Sprint("search ", i), ix, randomQuery(rng), 25, "", nil)
			}
			putRef(t, ix, "ref3", 20, rng) // rewritten, more chunks
			putRef(t, ix, "ref17", 2, rng) // rewritten, fewer
			putRef(t, ix, "new", 9, rng)   // added
			removeRef(t, ix, "ref29")      // removed
			for i := range 3 {
				checkRank(t, fmt.Sprint("after writes, search ", i), ix, randomQuery(rng), 25, "", nil)
			}
			members := []string{"ref3", "ref5", "new"}
			if err := ix.SetScope(context.Background(), "s", members); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				checkRank(t, fmt.Sprint("scoped, search ", i), ix, randomQuery(rng), 10, "s", members)
			}
			checkRank(t, "every hit", ix, randomQuery(rng), 1000, "", nil)
		})
	}
}

func removeRef(t *testing.T, ix *Index, ref string) {
	t.Helper()
	if err := ix.Remove(context.Background(), ref, ""); err != nil {
		t.Fatal(err)
	}
}

// TestCacheServesItsVersion: once a block is kept, a search scores the
// kept copy while the block's row holds the version it was kept at (the
// vectors changed behind the index's back, keeping the version, do not
// show), and reads the file again as soon as a write gives the block a
// new version.
func TestCacheServesItsVersion(t *testing.T) {
	ix := vectorIndex(t, nil, 1, 5, 8)
	rng := rand.New(rand.NewPCG(15, 16))
	q := randomQuery(rng)
	for range 3 {
		checkRank(t, "warming", ix, q, 5, "", nil)
	}
	before, err := ix.rank(context.Background(), q, &SearchOptions{}, 5)
	if err != nil {
		t.Fatal(err)
	}
	// Negate every stored vector without a new version.
	var vecs []byte
	if err := ix.db.QueryRow(`SELECT vecs FROM vec_blocks`).Scan(&vecs); err != nil {
		t.Fatal(err)
	}
	v := decodeVector(vecs)
	for i := range v {
		v[i] = -v[i]
	}
	if _, err := ix.db.Exec(`UPDATE vec_blocks SET vecs = ?`, encodeVector(v)); err != nil {
		t.Fatal(err)
	}
	kept, err := ix.rank(context.Background(), q, &SearchOptions{}, 5)
	if err != nil || kept.Hits[0].Score != before.Hits[0].Score {
		t.Fatalf("with the version kept, the best score is %v (%v), want the kept copy's %v", kept.Hits[0].Score, err, before.Hits[0].Score)
	}
	if _, err := ix.db.Exec(`UPDATE vec_blocks SET ver = random()`); err != nil {
		t.Fatal(err)
	}
	checkRank(t, "after a new version", ix, q, 5, "", nil)
	if got, _ := ix.rank(context.Background(), q, &SearchOptions{}, 5); got.Hits[0].Score == before.Hits[0].Score {
		t.Fatalf("after a new version the kept copy still scores")
	}
}

// TestFormat2Versioned: an index of format 2 (blocks without versions)
// is brought to the current format when opened, its blocks kept, and
// searched exactly.
func TestFormat2Versioned(t *testing.T) {
	ix := vectorIndex(t, nil, 6, 9, 5)
	var file string
	if err := ix.db.QueryRow(`SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&file); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE v2(id INTEGER PRIMARY KEY, n INTEGER NOT NULL, ids BLOB NOT NULL, vecs BLOB NOT NULL)`,
		`INSERT INTO v2 SELECT id, n, ids, vecs FROM vec_blocks`,
		`DROP TABLE vec_blocks`,
		`ALTER TABLE v2 RENAME TO vec_blocks`,
		`CREATE INDEX vec_blocks_n ON vec_blocks(n)`,
		`UPDATE meta SET value = '2' WHERE key = 'format'`,
	} {
		if _, err := ix.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := blockStats(t, ix)
	ix.Close()
	ix, err := Open(context.Background(), file, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var f string
	if err := ix.db.QueryRow(`SELECT value FROM meta WHERE key = 'format'`).Scan(&f); err != nil || f != Format {
		t.Fatalf("format %q (%v) after opening, want %q", f, err, Format)
	}
	if got, _ := blockStats(t, ix); !slices.Equal(got, want) {
		t.Fatalf("blocks %v after versioning, %v before", got, want)
	}
	rng := rand.New(rand.NewPCG(17, 18))
	for range 3 {
		checkRank(t, "versioned", ix, randomQuery(rng), 10, "", nil)
	}
}

// TestCacheBytesBounds: the cache bound is checked at open, at the hard
// limit and past it.
func TestCacheBytesBounds(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		bytes int64
		code  fault.Code
	}{
		{-1, fault.InvalidInput},
		{limits.SemMaxCacheBytes + 1, fault.Limit},
		{limits.SemMaxCacheBytes, ""},
		{1, ""},
	} {
		ix, err := Open(context.Background(), filepath.Join(dir, "c.db"), &OpenOptions{CacheBytes: c.bytes})
		if fault.CodeOf(err) != c.code {
			t.Errorf("CacheBytes %d: %v, want %q", c.bytes, err, c.code)
		}
		if err == nil {
			ix.Close()
		}
	}
}

// TestCacheScoresAsFile: a search from the cache gives the scores, bit
// for bit, that the same search gives reading every block from the file
// (the dot-only kernel sums as the dot-and-norm one, the norms kept are
// those it summed).
func TestCacheScoresAsFile(t *testing.T) {
	ix := vectorIndex(t, nil, 20, 11, 9)
	rng := rand.New(rand.NewPCG(19, 20))
	q := randomQuery(rng)
	var runs [][]Hit
	for range 4 { // from the file twice (the second keeps), then from the cache
		res, err := ix.rank(context.Background(), q, &SearchOptions{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, res.Hits)
	}
	if kept := len(ix.cache.blocks); kept == 0 || ix.cache.used == 0 {
		t.Fatalf("nothing kept after 4 searches")
	}
	for i := 1; i < len(runs); i++ {
		if !slices.Equal(runs[i], runs[0]) {
			t.Fatalf("search %d differs from the first (read from the file)", i)
		}
	}
}
