package semindex

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Vectors are stored in blocks: one vec_blocks row holds up to
// limits.SemBlockVectors chunk vectors, contiguous little-endian float32 in
// vecs, with their chunk ids (little-endian int64) at the same positions in
// ids. A search scores a whole block per SQL function call, so SQLite's
// per-row and per-call costs are paid once per block, not once per chunk.
// A full block spans overflow pages, which SQLite reads from the file
// straight into the function's argument (one read per page, bypassing its
// page cache, once the pages are checkpointed out of the WAL). Those
// reads cost most of a search, so an open Index keeps in memory the
// blocks it has read twice (cache.go, up to OpenOptions.CacheBytes), and
// its later searches read from the file only the blocks written since.
// Every chunk row names its block; a mutation rewrites the blocks it
// touches in its own transaction, each with a new random version (ver),
// by which a search knows whether the Index's cache (cache.go) holds the
// block as its snapshot does.

// blockVectors is how many vectors a mutation puts in one block: the
// limit, smaller only in tests of block boundaries.
var blockVectors = limits.SemBlockVectors

// block is one decoded vec_blocks row.
type block struct {
	id   int64
	ids  []byte
	vecs []byte
}

func (b *block) n() int { return len(b.ids) / 8 }

func (b *block) chunkID(i int) int64 { return int64(binary.LittleEndian.Uint64(b.ids[8*i:])) }

// checkShape says whether the blobs agree with each other and with dim.
func checkShape(ids, vecs []byte, dim int) error {
	if len(ids)%8 != 0 || dim <= 0 || len(vecs) != len(ids)/8*4*dim || len(ids)/8 > limits.SemBlockVectors {
		return fmt.Errorf("a vector block of %d id bytes and %d vector bytes does not hold whole %d-dimensional vectors (at most %d)", len(ids), len(vecs), dim, limits.SemBlockVectors)
	}
	return nil
}

// openBlock returns the fullest block that has room, or a new empty one.
func openBlock(ctx context.Context, tx *sql.Tx, capacity int) (*block, error) {
	b := &block{}
	err := tx.QueryRowContext(ctx, `SELECT id, ids, vecs FROM vec_blocks WHERE n < ? ORDER BY n DESC, id LIMIT 1`, capacity).Scan(&b.id, &b.ids, &b.vecs)
	if err == nil || err != sql.ErrNoRows {
		return b, dbFault(err, "reading a vector block")
	}
	r, err := tx.ExecContext(ctx, `INSERT INTO vec_blocks(ver, n, ids, vecs) VALUES(random(), 0, x'', x'')`)
	if err != nil {
		return nil, dbFault(err, "creating a vector block")
	}
	b.id, err = r.LastInsertId()
	return b, dbFault(err, "creating a vector block")
}

func saveBlock(ctx context.Context, tx *sql.Tx, b *block) error {
	var err error
	if b.n() == 0 {
		_, err = tx.ExecContext(ctx, `DELETE FROM vec_blocks WHERE id = ?`, b.id)
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE vec_blocks SET ver = random(), n = ?, ids = ?, vecs = ? WHERE id = ?`, b.n(), b.ids, b.vecs, b.id)
	}
	return dbFault(err, "writing a vector block")
}

// chunkRow is one chunk to store: its span and its vector.
type chunkRow struct {
	start, end, pieces int
	vec                []float32
}

// storeChunks inserts the chunk rows of ref refID and places their vectors
// in blocks with room, filling the fullest first.
func storeChunks(ctx context.Context, tx *sql.Tx, refID int64, rows []chunkRow) error {
	st, err := tx.PrepareContext(ctx, `INSERT INTO chunks(ref_id, cstart, cend, pieces, block_id) VALUES(?, ?, ?, ?, ?)`)
	if err != nil {
		return dbFault(err, "storing chunks")
	}
	defer st.Close()
	for len(rows) > 0 {
		b, err := openBlock(ctx, tx, blockVectors)
		if err != nil {
			return err
		}
		k := min(blockVectors-b.n(), len(rows))
		for _, c := range rows[:k] {
			r, err := st.ExecContext(ctx, refID, c.start, c.end, c.pieces, b.id)
			if err != nil {
				return dbFault(err, "storing chunks")
			}
			id, err := r.LastInsertId()
			if err != nil {
				return dbFault(err, "storing chunks")
			}
			b.ids = binary.LittleEndian.AppendUint64(b.ids, uint64(id))
			b.vecs = append(b.vecs, encodeVector(c.vec)...)
		}
		if err := saveBlock(ctx, tx, b); err != nil {
			return err
		}
		rows = rows[k:]
	}
	return nil
}

// removeVectors takes the vectors of ref refID's chunks out of their
// blocks (deleting blocks left empty); the chunk rows stay for the caller
// to delete.
func removeVectors(ctx context.Context, tx *sql.Tx, refID int64) error {
	mine, blocks, err := refChunks(ctx, tx, refID)
	if err != nil {
		return err
	}
	for _, bid := range blocks {
		b := &block{id: bid}
		if err := tx.QueryRowContext(ctx, `SELECT ids, vecs FROM vec_blocks WHERE id = ?`, bid).Scan(&b.ids, &b.vecs); err != nil {
			return dbFault(err, "reading a vector block")
		}
		dim := 0
		if b.n() > 0 {
			dim = len(b.vecs) / b.n() / 4
		}
		if err := checkShape(b.ids, b.vecs, max(dim, 1)); err != nil {
			return fault.Wrap(fault.Integrity, err, "vector block %d is damaged; run audit", bid)
		}
		keep := &block{id: bid, ids: b.ids[:0:0], vecs: b.vecs[:0:0]}
		for i := range b.n() {
			if _, gone := mine[b.chunkID(i)]; !gone {
				keep.ids = append(keep.ids, b.ids[8*i:8*i+8]...)
				keep.vecs = append(keep.vecs, b.vecs[4*dim*i:4*dim*(i+1)]...)
			}
		}
		if err := saveBlock(ctx, tx, keep); err != nil {
			return err
		}
	}
	return nil
}

// refChunks lists ref refID's chunk ids and the blocks that hold them.
func refChunks(ctx context.Context, tx *sql.Tx, refID int64) (map[int64]struct{}, []int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, block_id FROM chunks WHERE ref_id = ? ORDER BY block_id`, refID)
	if err != nil {
		return nil, nil, dbFault(err, "reading chunks")
	}
	defer rows.Close()
	mine := map[int64]struct{}{}
	var blocks []int64
	for rows.Next() {
		var id, bid int64
		if err := rows.Scan(&id, &bid); err != nil {
			return nil, nil, dbFault(err, "reading chunks")
		}
		mine[id] = struct{}{}
		if len(blocks) == 0 || blocks[len(blocks)-1] != bid {
			blocks = append(blocks, bid)
		}
	}
	return mine, blocks, dbFault(rows.Err(), "reading chunks")
}
