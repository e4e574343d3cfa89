package semindex

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// zeroVectors zeroes the stored vectors of ref's chunks inside their
// blocks, as damage the audit must find.
func zeroVectors(t *testing.T, ix *Index, ref string) {
	t.Helper()
	ctx := context.Background()
	err := ix.write(ctx, func(tx *sql.Tx) error {
		var refID int64
		if err := tx.QueryRowContext(ctx, `SELECT id FROM refs WHERE ref = ?`, ref).Scan(&refID); err != nil {
			return err
		}
		mine, blocks, err := refChunks(ctx, tx, refID)
		if err != nil {
			return err
		}
		for _, bid := range blocks {
			b := &block{id: bid}
			if err := tx.QueryRowContext(ctx, `SELECT ids, vecs FROM vec_blocks WHERE id = ?`, bid).Scan(&b.ids, &b.vecs); err != nil {
				return err
			}
			stride := len(b.vecs) / b.n()
			for i := range b.n() {
				if _, ok := mine[b.chunkID(i)]; ok {
					clear(b.vecs[i*stride : (i+1)*stride])
				}
			}
			if err := saveBlock(ctx, tx, b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// blockStats is what the blocks hold: vectors per block and in all.
func blockStats(t *testing.T, ix *Index) (perBlock []int, total int) {
	t.Helper()
	rows, err := ix.db.Query(`SELECT n, length(ids) FROM vec_blocks ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n, idBytes int
		if err := rows.Scan(&n, &idBytes); err != nil {
			t.Fatal(err)
		}
		if idBytes != 8*n {
			t.Fatalf("block records %d vectors in %d id bytes", n, idBytes)
		}
		perBlock = append(perBlock, n)
		total += n
	}
	return perBlock, total
}

// smallBlocks makes blocks of 4 vectors for the test, so that boundaries
// are crossed by a few chunks.
func smallBlocks(t *testing.T) int {
	blockVectors = 4
	t.Cleanup(func() { blockVectors = limits.SemBlockVectors })
	return blockVectors
}

// manyChunks is a text of about n chunks for the tiny model.
func manyChunks(n int, word string) string {
	return strings.Repeat(word+" ", n*limits.SemChunkPieces)
}

func mustAudit(t *testing.T, ix *Index) {
	t.Helper()
	rep, err := ix.Audit(context.Background(), tiny(t))
	if err != nil || !rep.OK {
		t.Fatalf("audit: %+v %v", rep, err)
	}
}

func TestBlocksFillAndSpan(t *testing.T) {
	ctx := context.Background()
	m := tiny(t)
	ix, _ := openTemp(t)
	bv := smallBlocks(t)
	// Single-chunk refs up to a block boundary and one past it.
	for i := range bv + 1 {
		if _, err := ix.Add(ctx, m, fmt.Sprint("one", i), fmt.Sprint("short text ", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	per, total := blockStats(t, ix)
	if len(per) != 2 || per[0] != bv || per[1] != 1 || total != bv+1 {
		t.Fatalf("blocks %v after %d single-chunk refs", per, bv+1)
	}
	// A ref of many chunks fills the second block and spans into a third.
	text := manyChunks(bv, "fox")
	r, err := ix.Add(ctx, m, "span", text, nil)
	if err != nil {
		t.Fatal(err)
	}
	per, total = blockStats(t, ix)
	if len(per) != 3 || per[1] != bv || total != bv+1+r.Chunks {
		t.Fatalf("blocks %v after a ref of %d chunks", per, r.Chunks)
	}
	res, err := ix.Search(ctx, m, "fox", &SearchOptions{Limit: limits.SemSearchMaxHits})
	if err != nil || res.Scanned != int64(total) {
		t.Fatalf("search scanned %d of %d: %v", res.Scanned, total, err)
	}
	spanHits := 0
	for _, h := range res.Hits {
		if h.Ref == "span" {
			spanHits++
		}
	}
	if spanHits != r.Chunks || res.Hits[0].Ref != "span" {
		t.Errorf("%d hits of the spanning ref, want all %d first", spanHits, r.Chunks)
	}
	mustAudit(t, ix)
}

func TestBlocksRemoveReplace(t *testing.T) {
	ctx := context.Background()
	m := tiny(t)
	ix, _ := openTemp(t)
	bv := smallBlocks(t)
	addDocs(t, ix, m)
	big := manyChunks(2*bv+1, "tokyo")
	r, err := ix.Add(ctx, m, "big", big, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Replacing with a short text leaves one vector for the ref.
	if _, err := ix.Add(ctx, m, "big", "a short replacement", nil); err != nil {
		t.Fatal(err)
	}
	_, total := blockStats(t, ix)
	if total != len(docs)+1 {
		t.Fatalf("%d vectors stored after replacing %d chunks by 1; want %d", total, r.Chunks, len(docs)+1)
	}
	mustAudit(t, ix)
	for ref := range docs {
		if err := ix.Remove(ctx, ref, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Remove(ctx, "big", ""); err != nil {
		t.Fatal(err)
	}
	per, total := blockStats(t, ix)
	if total != 0 || len(per) != 0 {
		t.Fatalf("blocks %v left after removing every ref", per)
	}
	res, err := ix.Search(ctx, m, "tokyo", nil)
	if err != nil || res.Scanned != 0 || len(res.Hits) != 0 {
		t.Fatalf("search of an emptied index: %+v %v", res, err)
	}
	mustAudit(t, ix)
}

func TestScopeSmallerThanBlock(t *testing.T) {
	ctx := context.Background()
	m := tiny(t)
	ix, _ := openTemp(t)
	addDocs(t, ix, m)
	for i := range 30 {
		if _, err := ix.Add(ctx, m, fmt.Sprint("copy", i), docs["fox"], nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.SetScope(ctx, "two", []string{"cafe", "number"}); err != nil {
		t.Fatal(err)
	}
	res, err := ix.Search(ctx, m, docs["fox"], &SearchOptions{Scope: "two", Limit: limits.SemSearchMaxHits})
	if err != nil {
		t.Fatal(err)
	}
	if res.Scanned != 2 || len(res.Hits) != 2 {
		t.Fatalf("scope of 2 refs among %d: %+v", len(docs)+30, res)
	}
	for _, h := range res.Hits {
		if h.Ref != "cafe" && h.Ref != "number" {
			t.Errorf("hit %+v outside the scope", h)
		}
	}
}

func TestAuditFindsBlockDamage(t *testing.T) {
	ctx := context.Background()
	m := tiny(t)
	for _, c := range []struct {
		name, sql string
	}{
		{"truncated vectors", `UPDATE vec_blocks SET vecs = substr(vecs, 1, length(vecs) - 4)`},
		{"a dropped id", `UPDATE vec_blocks SET ids = substr(ids, 9), n = n - 1, vecs = substr(vecs, 1, length(vecs) - length(vecs) / n)`},
		{"a missing block", `DELETE FROM vec_blocks`},
		{"a duplicated id", `UPDATE vec_blocks SET ids = substr(ids, 1, 8) || substr(ids, 1, length(ids) - 8)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ix, _ := openTemp(t)
			addDocs(t, ix, m)
			if _, err := ix.db.ExecContext(ctx, c.sql); err != nil {
				t.Fatal(err)
			}
			rep, err := ix.Audit(ctx, m)
			if err != nil || rep.OK {
				t.Fatalf("audit of %s: %+v %v", c.name, rep, err)
			}
		})
	}
	ix, _ := openTemp(t)
	addDocs(t, ix, m)
	if _, err := ix.db.ExecContext(ctx, `UPDATE vec_blocks SET vecs = substr(vecs, 2)`); err != nil {
		t.Fatal(err)
	}
	_, err := ix.Search(ctx, m, "fox", nil)
	wantCode(t, "search over a damaged block", err, fault.Integrity)
}

func TestOldFormatRefused(t *testing.T) {
	ctx := context.Background()
	ix, path := openTemp(t)
	if _, err := ix.db.ExecContext(ctx, `UPDATE meta SET value = '1' WHERE key = 'format'`); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	_, err := Open(ctx, path, nil)
	wantCode(t, "an index of format 1", err, fault.InvalidInput)
	if err == nil || !strings.Contains(err.Error(), `format "1"`) || !strings.Contains(err.Error(), "new index") {
		t.Errorf("message %v does not name the format and the remedy", err)
	}
}

func TestBlockShape(t *testing.T) {
	id := binary.LittleEndian.AppendUint64(nil, 7)
	for _, c := range []struct {
		ids, vecs []byte
		dim       int
		ok        bool
	}{
		{nil, nil, 4, true},
		{id, make([]byte, 16), 4, true},
		{id, make([]byte, 15), 4, false},
		{id[:7], make([]byte, 16), 4, false},
		{make([]byte, 8*(limits.SemBlockVectors+1)), make([]byte, 4*(limits.SemBlockVectors+1)), 1, false},
		{make([]byte, 8*limits.SemBlockVectors), make([]byte, 4*limits.SemBlockVectors), 1, true},
	} {
		if err := checkShape(c.ids, c.vecs, c.dim); (err == nil) != c.ok {
			t.Errorf("checkShape(%d id bytes, %d vector bytes, dim %d) = %v", len(c.ids), len(c.vecs), c.dim, err)
		}
	}
}

// TestSearchDuringWrites searches while another goroutine flips a ref
// between two versions of different chunk counts: the scan is split
// across connections, and every search must see one version whole.
func TestSearchDuringWrites(t *testing.T) {
	ctx := context.Background()
	m := tiny(t)
	ix, _ := openTemp(t)
	smallBlocks(t)
	addDocs(t, ix, m)
	ra, err := ix.Add(ctx, m, "doc", versionA, nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := ix.Add(ctx, m, "doc", versionB, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		for i := range 20 {
			text := versionA
			if i%2 == 1 {
				text = versionB
			}
			if _, err := ix.Add(ctx, m, "doc", text, nil); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for searching := true; searching; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			searching = false
		default:
		}
		res, err := ix.Search(ctx, m, "version", &SearchOptions{Limit: limits.SemSearchMaxHits})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, h := range res.Hits {
			if h.Ref == "doc" {
				n++
			}
		}
		if n != ra.Chunks && n != rb.Chunks || res.Scanned != int64(n+len(docs)) {
			t.Fatalf("a search saw %d chunks of doc (versions have %d and %d) and scanned %d", n, ra.Chunks, rb.Chunks, res.Scanned)
		}
	}
	mustAudit(t, ix)
}
