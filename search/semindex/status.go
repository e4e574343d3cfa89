package semindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/capkit/capkit/limits"

	"github.com/capkit/capkit/search/semindex/bert"
)

// RefStatus is what the metadata says about one ref.
type RefStatus struct {
	Ref     string `json:"ref"`
	Indexed bool   `json:"indexed"`
	Digest  string `json:"digest,omitempty"`
	Chunks  int    `json:"chunks"`
	Chars   int    `json:"chars"`
	// Stale is set when the caller gave a current digest: true when it
	// differs from the indexed one (or the ref is not indexed).
	Stale *bool `json:"stale,omitempty"`
}

// Status is the index's readiness from metadata alone. It is not an audit:
// vectors and sources are not read.
type Status struct {
	Format      string      `json:"format"`
	ModelDigest string      `json:"model_digest,omitempty"`
	Dim         int         `json:"dim,omitempty"`
	Window      int         `json:"window"`
	Refs        int         `json:"refs"`
	Chunks      int         `json:"chunks"`
	Scopes      int         `json:"scopes"`
	Entries     []RefStatus `json:"entries"`
	Note        string      `json:"note"`
}

// StatusOptions select refs. A nil *StatusOptions lists every ref.
type StatusOptions struct {
	// Refs to report; empty means all.
	Refs []string
	// Current digests by ref, to report staleness.
	Current map[string]string
}

// StatusNote says what Status does not check.
const StatusNote = "from metadata only; run audit for the full check"

// Status reports the index from its metadata.
func (ix *Index) Status(ctx context.Context, opts *StatusOptions) (*Status, error) {
	var o StatusOptions
	if opts != nil {
		o = *opts
	}
	s := &Status{Format: Format, Entries: []RefStatus{}, Note: StatusNote}
	var err error
	if s.ModelDigest, err = metaValue(ctx, ix.db, "model_digest"); err != nil {
		return nil, err
	}
	for key, dst := range map[string]*int{"dim": &s.Dim, "window": &s.Window} {
		v, err := metaValue(ctx, ix.db, key)
		if err != nil {
			return nil, err
		}
		*dst, _ = strconv.Atoi(v)
	}
	err = ix.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM refs), (SELECT coalesce(sum(chunks), 0) FROM refs), (SELECT count(*) FROM scopes)`).Scan(&s.Refs, &s.Chunks, &s.Scopes)
	if err != nil {
		return nil, dbFault(err, "reading the status")
	}
	if len(o.Refs) == 0 {
		err = ix.allRefs(ctx, s, o.Current)
	} else {
		err = ix.someRefs(ctx, s, o.Refs, o.Current)
	}
	return s, err
}

func (ix *Index) allRefs(ctx context.Context, s *Status, current map[string]string) error {
	rows, err := ix.db.QueryContext(ctx, `SELECT ref, digest, chunks, chars FROM refs ORDER BY ref`)
	if err != nil {
		return dbFault(err, "reading the status")
	}
	defer rows.Close()
	for rows.Next() {
		e := RefStatus{Indexed: true}
		if err := rows.Scan(&e.Ref, &e.Digest, &e.Chunks, &e.Chars); err != nil {
			return dbFault(err, "reading the status")
		}
		s.Entries = append(s.Entries, withStale(e, current))
	}
	return dbFault(rows.Err(), "reading the status")
}

func (ix *Index) someRefs(ctx context.Context, s *Status, refs []string, current map[string]string) error {
	for _, r := range refs {
		e := RefStatus{Ref: r}
		err := ix.db.QueryRowContext(ctx, `SELECT digest, chunks, chars FROM refs WHERE ref = ?`, r).Scan(&e.Digest, &e.Chunks, &e.Chars)
		switch {
		case err == nil:
			e.Indexed = true
		case !errors.Is(err, sql.ErrNoRows):
			return dbFault(err, "reading the status")
		}
		s.Entries = append(s.Entries, withStale(e, current))
	}
	return nil
}

func withStale(e RefStatus, current map[string]string) RefStatus {
	if d, ok := current[e.Ref]; ok {
		stale := !e.Indexed || d != e.Digest
		e.Stale = &stale
	}
	return e
}

// AuditProblem is one disagreement the audit found.
type AuditProblem struct {
	Ref     string `json:"ref,omitempty"`
	Problem string `json:"problem"`
}

// AuditReport is the result of the full check.
type AuditReport struct {
	Full     bool           `json:"full"`
	OK       bool           `json:"ok"`
	Refs     int            `json:"refs"`
	Chunks   int            `json:"chunks"`
	Blocks   int            `json:"blocks"`
	Problems []AuditProblem `json:"problems"`
	Note     string         `json:"note"`
}

// auditTolerance is the largest difference between a stored and a
// recomputed vector component that the audit accepts (the kernels of two
// machines may round differently).
const auditTolerance = 1e-5

// Audit is the full check: SQLite's integrity check, then for every ref
// its stored source's digest, its chunking and every chunk's vector,
// recomputed with m and compared. It reads and re-embeds everything; use
// Status for readiness.
func (ix *Index) Audit(ctx context.Context, m *bert.Model) (*AuditReport, error) {
	if err := ix.checkModel(ctx, m); err != nil {
		return nil, err
	}
	rep := &AuditReport{Full: true, Problems: []AuditProblem{}, Note: "full check: SQLite integrity, every vector block, every source digest, chunking and vector recomputed"}
	if err := ix.integrity(ctx, rep); err != nil {
		return nil, err
	}
	if err := ix.auditBlocks(ctx, m.Dim(), rep); err != nil {
		return nil, err
	}
	ids, err := ix.refIDs(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := ix.auditRef(ctx, m, id, rep); err != nil {
			return nil, err
		}
	}
	rep.OK = len(rep.Problems) == 0
	return rep, nil
}

func (ix *Index) integrity(ctx context.Context, rep *AuditReport) error {
	rows, err := ix.db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return dbFault(err, "checking integrity")
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return dbFault(err, "checking integrity")
		}
		if line != "ok" {
			rep.Problems = append(rep.Problems, AuditProblem{Problem: "sqlite: " + line})
		}
	}
	return dbFault(rows.Err(), "checking integrity")
}

func (ix *Index) refIDs(ctx context.Context) ([]int64, error) {
	return ix.ids(ctx, `SELECT id FROM refs ORDER BY id`)
}

// ids runs a query of one integer column.
func (ix *Index) ids(ctx context.Context, q string, args ...any) ([]int64, error) {
	rows, err := ix.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, dbFault(err, "auditing")
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, dbFault(err, "auditing")
		}
		ids = append(ids, id)
	}
	return ids, dbFault(rows.Err(), "auditing")
}

type storedChunk struct {
	start, end, pieces int
	vec                []float32 // nil when its block does not hold it
}

func (ix *Index) auditRef(ctx context.Context, m *bert.Model, id int64, rep *AuditReport) error {
	var ref, sum, text string
	var nchunks int
	err := ix.db.QueryRowContext(ctx, `SELECT r.ref, r.text_sha256, r.chunks, coalesce(s.text, '') FROM refs r LEFT JOIN sources s ON s.ref_id = r.id WHERE r.id = ?`, id).Scan(&ref, &sum, &nchunks, &text)
	if err != nil {
		return dbFault(err, "reading a source")
	}
	rep.Refs++
	bad := func(format string, args ...any) {
		rep.Problems = append(rep.Problems, AuditProblem{Ref: ref, Problem: fmt.Sprintf(format, args...)})
	}
	if TextDigest(text) != sum {
		bad("stored source has SHA-256 %s, recorded %s", TextDigest(text), sum)
		return nil
	}
	stored, err := ix.storedChunks(ctx, id)
	if err != nil {
		return err
	}
	chunks, vecs, err := embedSource(ctx, m, text)
	if err != nil {
		return err
	}
	rep.Chunks += len(stored)
	if len(stored) != len(chunks) || nchunks != len(chunks) {
		bad("%d chunks stored (%d recorded), %d recomputed", len(stored), nchunks, len(chunks))
		return nil
	}
	for i, c := range chunks {
		s := stored[i]
		if s.start != c.Start || s.end != c.End || s.pieces != len(c.IDs) {
			bad("chunk %d: stored [%d,%d) of %d pieces, recomputed [%d,%d) of %d", i, s.start, s.end, s.pieces, c.Start, c.End, len(c.IDs))
			continue
		}
		if s.vec == nil {
			bad("chunk %d: its vector block does not hold its vector", i)
		} else if d := maxDiff(s.vec, vecs[i]); d > auditTolerance {
			bad("chunk %d: stored vector differs from the recomputed one by up to %.3g", i, d)
		}
	}
	return nil
}

// storedChunks reads ref id's chunks in order, each with the vector its
// block holds for it.
func (ix *Index) storedChunks(ctx context.Context, id int64) ([]storedChunk, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT c.id, c.cstart, c.cend, c.pieces, b.ids, b.vecs FROM chunks c LEFT JOIN vec_blocks b ON b.id = c.block_id WHERE c.ref_id = ? ORDER BY c.cstart, c.id`, id)
	if err != nil {
		return nil, dbFault(err, "reading chunks")
	}
	defer rows.Close()
	var out []storedChunk
	for rows.Next() {
		var c storedChunk
		var cid int64
		var b block
		if err := rows.Scan(&cid, &c.start, &c.end, &c.pieces, &b.ids, &b.vecs); err != nil {
			return nil, dbFault(err, "reading chunks")
		}
		c.vec = b.vector(cid)
		out = append(out, c)
	}
	return out, dbFault(rows.Err(), "reading chunks")
}

// vector is the vector the block holds for chunk cid, nil if none.
func (b *block) vector(cid int64) []float32 {
	n := b.n()
	if n == 0 || len(b.vecs)%(4*n) != 0 {
		return nil
	}
	stride := len(b.vecs) / n
	for i := range n {
		if b.chunkID(i) == cid {
			return decodeVector(b.vecs[i*stride : (i+1)*stride])
		}
	}
	return nil
}

// auditBlocks checks that every block holds whole vectors of the model's
// dimension, that its ids are exactly the chunks that name it, and that no
// chunk names a missing block.
func (ix *Index) auditBlocks(ctx context.Context, dim int, rep *AuditReport) error {
	bids, err := ix.ids(ctx, `SELECT id FROM vec_blocks ORDER BY id`)
	if err != nil {
		return err
	}
	for _, bid := range bids {
		var n, vecBytes int64
		var ids []byte
		if err := ix.db.QueryRowContext(ctx, `SELECT n, ids, length(vecs) FROM vec_blocks WHERE id = ?`, bid).Scan(&n, &ids, &vecBytes); err != nil {
			return dbFault(err, "checking vector blocks")
		}
		naming, err := ix.ids(ctx, `SELECT id FROM chunks WHERE block_id = ? ORDER BY id`, bid)
		if err != nil {
			return err
		}
		rep.Blocks++
		if p := blockProblem(&block{id: bid, ids: ids}, n, vecBytes, dim, naming); p != "" {
			rep.Problems = append(rep.Problems, AuditProblem{Problem: fmt.Sprintf("vector block %d: %s", bid, p)})
		}
	}
	var orphans int
	if err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM chunks WHERE block_id NOT IN (SELECT id FROM vec_blocks)`).Scan(&orphans); err != nil {
		return dbFault(err, "checking vector blocks")
	}
	if orphans != 0 {
		rep.Problems = append(rep.Problems, AuditProblem{Problem: fmt.Sprintf("%d chunks name a vector block that does not exist", orphans)})
	}
	return nil
}

// blockProblem describes what is wrong with a block, "" if nothing.
func blockProblem(b *block, n, vecBytes int64, dim int, naming []int64) string {
	if int64(len(b.ids)) != 8*n || vecBytes != 4*int64(dim)*n || n < 1 || n > limits.SemBlockVectors {
		return fmt.Sprintf("%d vectors recorded, %d id bytes, %d vector bytes (dimension %d)", n, len(b.ids), vecBytes, dim)
	}
	held := make(map[int64]bool, b.n())
	for i := range b.n() {
		held[b.chunkID(i)] = true
	}
	for _, id := range naming {
		if !held[id] {
			return fmt.Sprintf("chunk %d names this block, which does not hold it", id)
		}
	}
	if len(naming) != b.n() || len(held) != b.n() {
		return fmt.Sprintf("holds %d vectors (%d distinct chunks); %d chunks name it", b.n(), len(held), len(naming))
	}
	return ""
}

func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}
