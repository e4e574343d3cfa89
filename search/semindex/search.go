package semindex

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	sqlite "modernc.org/sqlite"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/search/semindex/bert"
)

// blockFunc is the SQL function semindex_block(query_id, id, ver, ids,
// vecs): it scores every vector of one block (the row of vec_blocks) by
// exact cosine against the query registered under query_id for the
// duration of one search, keeps the best in that query's bounded top-k,
// offers the block to the Index's cache, and returns how many vectors it
// scored. cachedFunc, semindex_cached(query_id, id, ver), does the same
// from the cache's copy of the block at that version, and is NULL when
// the cache has none: the scan calls blockFunc only then, so that SQLite
// reads the blobs of no block the cache holds.
const (
	blockFunc  = "semindex_block"
	cachedFunc = "semindex_cached"
)

type activeQuery struct {
	ctx  context.Context
	v    []float32
	norm float64
	// members, when not nil, is the scope: the chunk ids that may be hits.
	members map[int64]struct{}
	top     topK
	scanned int64
	// both, dots and norms are the scratch of scoring one block.
	both        [2 * limits.SemBlockVectors]float32
	dots, norms [limits.SemBlockVectors]float32
	// damaged is the first block that does not hold whole vectors.
	damaged error
	// cache is the Index's (nil without one); scan numbers this search
	// for it.
	cache *blockCache
	scan  uint64
}

var (
	queries   sync.Map // int64 → *activeQuery
	nextQuery atomic.Int64
	register  sync.Once
)

func registerOnce() {
	register.Do(func() {
		sqlite.MustRegisterFunction(blockFunc, &sqlite.FunctionImpl{
			NArgs: 5, VolatileArgs: true,
			Scalar: func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
				aq, err := lookupQuery(args[0])
				if err != nil {
					return nil, err
				}
				bid, _ := args[1].(int64)
				ver, _ := args[2].(int64)
				ids, _ := args[3].([]byte)
				vecs, _ := args[4].([]byte)
				return aq.scoreBlock(bid, ver, ids, vecs)
			},
		})
		sqlite.MustRegisterFunction(cachedFunc, &sqlite.FunctionImpl{
			NArgs: 3,
			Scalar: func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
				aq, err := lookupQuery(args[0])
				if err != nil {
					return nil, err
				}
				bid, _ := args[1].(int64)
				ver, _ := args[2].(int64)
				return aq.scoreCached(bid, ver)
			},
		})
	})
}

// lookupQuery finds the active query a function call names.
func lookupQuery(arg driver.Value) (*activeQuery, error) {
	id, _ := arg.(int64)
	q, ok := queries.Load(id)
	if !ok {
		return nil, fmt.Errorf("%s: no active query %d", blockFunc, id)
	}
	return q.(*activeQuery), nil
}

// scoreBlock scores the vectors of one block read from the file, and
// offers it to the cache.
func (aq *activeQuery) scoreBlock(bid, ver int64, ids, vecs []byte) (int64, error) {
	if err := aq.ctx.Err(); err != nil {
		return 0, err
	}
	if err := checkShape(ids, vecs, len(aq.v)); err != nil {
		aq.damaged = err
		return 0, err
	}
	n := len(ids) / 8
	both := aq.both[:2*n]
	dotNormBlock(vecs, aq.v, both)
	dots, norms := aq.dots[:n], aq.norms[:n]
	for i := range n {
		dots[i], norms[i] = both[2*i], both[2*i+1]
	}
	if aq.cache != nil {
		aq.cache.offer(bid, ver, ids, vecs, norms, aq.scan)
	}
	return aq.offerAll(ids, dots, norms), nil
}

// scoreCached scores the cache's copy of block bid at version ver; nil
// (SQL NULL) when the cache has none.
func (aq *activeQuery) scoreCached(bid, ver int64) (driver.Value, error) {
	if err := aq.ctx.Err(); err != nil {
		return nil, err
	}
	if aq.cache == nil {
		return nil, nil
	}
	b, ok := aq.cache.get(bid, ver, aq.scan)
	if !ok || checkShape(b.ids, b.vecs, len(aq.v)) != nil {
		return nil, nil // read from the file, which checks it
	}
	dots := aq.dots[:len(b.norms)]
	dotBlock(b.vecs, aq.v, dots)
	return aq.offerAll(b.ids, dots, b.norms), nil
}

// offerAll offers the vectors of one block that are in scope to the
// top-k, scored from their dot products with the query and their squared
// norms, and returns how many it scored.
func (aq *activeQuery) offerAll(ids []byte, dots, norms []float32) int64 {
	var scored int64
	for i := range dots {
		cid := int64(binary.LittleEndian.Uint64(ids[8*i:]))
		if aq.members != nil {
			if _, ok := aq.members[cid]; !ok {
				continue
			}
		}
		aq.top.offer(cid, score(dots[i], norms[i], aq.norm))
		scored++
	}
	return scored
}

// SearchOptions narrow a search. A nil *SearchOptions is valid.
type SearchOptions struct {
	// Scope restricts hits to the refs of a named scope; the restriction
	// is applied before the limit.
	Scope string
	// Limit is the number of hits; zero means limits.SemSearchDefaultHits,
	// at most limits.SemSearchMaxHits.
	Limit int
	// WithText adds each hit's chunk text.
	WithText bool
}

// Hit is one ranked span.
type Hit struct {
	Ref   string  `json:"ref"`
	Start int     `json:"start"`
	End   int     `json:"end"`
	Score float64 `json:"score"`
	Text  string  `json:"text,omitempty"`
}

// SearchResult lists hits best first. Scanned is how many chunks were
// scored: every chunk in scope.
type SearchResult struct {
	Hits    []Hit  `json:"hits"`
	Scanned int64  `json:"scanned"`
	Scope   string `json:"scope,omitempty"`
	Model   string `json:"model"`
}

// Search embeds query with m and ranks every chunk in scope by exact
// cosine similarity, best first (ties in index order).
func (ix *Index) Search(ctx context.Context, m *bert.Model, query string, opts *SearchOptions) (*SearchResult, error) {
	var o SearchOptions
	if opts != nil {
		o = *opts
	}
	limit, err := hitLimit(o.Limit)
	if err != nil {
		return nil, err
	}
	if err := ix.checkModel(ctx, m); err != nil {
		return nil, err
	}
	if o.Scope != "" {
		if err := ix.scopeExists(ctx, o.Scope); err != nil {
			return nil, err
		}
	}
	qv, err := m.EmbedText(ctx, query)
	if err != nil {
		return nil, err
	}
	res, err := ix.rank(ctx, qv, &o, limit)
	if err != nil {
		return nil, err
	}
	res.Model = m.Digest()
	return res, nil
}

// rank scores every chunk in scope against qv inside SQLite. The scan is
// split by block id across the scan connections, all reading one
// snapshot; the scope, the scores and the hits' spans come from it.
func (ix *Index) rank(ctx context.Context, qv []float32, o *SearchOptions, limit int) (*SearchResult, error) {
	set, err := ix.scan.acquire(ctx, ix.db)
	if err != nil {
		return nil, err
	}
	var conns []*sql.Conn
	if set != nil {
		defer func() { ix.scan.release(conns) }()
		conns = set
	} else {
		c, err := ix.db.Conn(ctx)
		if err != nil {
			return nil, dbFault(err, "searching")
		}
		defer c.Close()
		defer func() {
			for _, c := range conns {
				endRead(c)
			}
		}()
		conns = []*sql.Conn{c}
	}
	if conns, err = snapshot(ctx, conns); err != nil {
		return nil, err
	}
	all := &activeQuery{v: qv, norm: norm(qv), top: topK{k: limit}, cache: ix.cache}
	if ix.cache != nil {
		all.scan = ix.cache.begin()
	}
	blocks := ""
	if o.Scope != "" {
		if all.members, blocks, err = scopeChunks(ctx, conns[0], o.Scope); err != nil {
			return nil, err
		}
	}
	var lo, hi sql.NullInt64
	if err := conns[0].QueryRowContext(ctx, `SELECT min(id), max(id) FROM vec_blocks`).Scan(&lo, &hi); err != nil {
		return nil, dbFault(err, "searching")
	}
	res := &SearchResult{Hits: []Hit{}, Scope: o.Scope}
	if lo.Valid {
		parts, err := scanParts(ctx, conns, all, blocks, lo.Int64, hi.Int64)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			res.Scanned += p.scanned
			for _, s := range p.top.kept {
				all.top.offer(s.id, s.score)
			}
		}
		if ix.cache != nil && all.members == nil {
			ix.cache.sweep(all.scan) // every block was found
		}
	}
	if res.Hits, err = hitSpans(ctx, conns[0], all.top.best(), o.WithText); err != nil {
		return nil, err
	}
	return res, nil
}

// scopeChunks loads the chunk ids of scope name's indexed refs and the
// blocks that hold them (a JSON array for json_each).
func scopeChunks(ctx context.Context, conn *sql.Conn, name string) (map[int64]struct{}, string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT c.id, c.block_id FROM scope_refs sr JOIN refs r ON r.ref = sr.ref JOIN chunks c ON c.ref_id = r.id WHERE sr.name = ? ORDER BY c.block_id`, name)
	if err != nil {
		return nil, "", dbFault(err, "reading the scope")
	}
	defer rows.Close()
	members := map[int64]struct{}{}
	var blocks []int64
	for rows.Next() {
		var id, bid int64
		if err := rows.Scan(&id, &bid); err != nil {
			return nil, "", dbFault(err, "reading the scope")
		}
		members[id] = struct{}{}
		if len(blocks) == 0 || blocks[len(blocks)-1] != bid {
			blocks = append(blocks, bid)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, "", dbFault(err, "reading the scope")
	}
	js, err := json.Marshal(blocks)
	return members, string(js), err
}

// hitSpans looks up the ref and span of each ranked chunk.
func hitSpans(ctx context.Context, conn *sql.Conn, ranked []scored, withText bool) ([]Hit, error) {
	q := `SELECT r.ref, c.cstart, c.cend FROM chunks c JOIN refs r ON r.id = c.ref_id WHERE c.id = ?`
	if withText {
		q = `SELECT r.ref, c.cstart, c.cend, substr(s.text, c.cstart + 1, c.cend - c.cstart) FROM chunks c JOIN refs r ON r.id = c.ref_id JOIN sources s ON s.ref_id = c.ref_id WHERE c.id = ?`
	}
	st, err := conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, dbFault(err, "reading hits")
	}
	defer st.Close()
	hits := make([]Hit, len(ranked))
	for i, r := range ranked {
		h := &hits[i]
		h.Score = r.score
		dst := []any{&h.Ref, &h.Start, &h.End}
		if withText {
			dst = append(dst, &h.Text)
		}
		if err := st.QueryRowContext(ctx, r.id).Scan(dst...); err != nil {
			return nil, dbFault(err, "reading hits")
		}
	}
	return hits, nil
}

func hitLimit(n int) (int, error) {
	switch {
	case n == 0:
		return limits.SemSearchDefaultHits, nil
	case n < 0:
		return 0, fault.New(fault.InvalidInput, "limit %d is negative", n)
	case n > limits.SemSearchMaxHits:
		return 0, fault.LimitExceeded("hits", limits.SemSearchMaxHits, int64(n))
	}
	return n, nil
}

// scopeExists is nil for a defined scope, not_found otherwise.
func (ix *Index) scopeExists(ctx context.Context, name string) error {
	var n int
	if err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM scopes WHERE name = ?`, name).Scan(&n); err != nil {
		return dbFault(err, "reading scopes")
	}
	if n == 0 {
		return fault.New(fault.NotFound, "scope %q is not defined in this index", clip.Text(name))
	}
	return nil
}

// SetScope defines scope name as exactly refs (which need not be indexed
// yet), replacing its previous members, in one transaction.
func (ix *Index) SetScope(ctx context.Context, name string, refs []string) error {
	if name == "" || len(name) > limits.SemScopeNameMaxBytes {
		return fault.New(fault.InvalidInput, "a scope name is 1 to %d bytes", limits.SemScopeNameMaxBytes)
	}
	if len(refs) > limits.SemScopeMaxRefs {
		return fault.LimitExceeded("refs in one scope call", limits.SemScopeMaxRefs, int64(len(refs)))
	}
	for _, r := range refs {
		if err := checkRef(r); err != nil {
			return err
		}
	}
	return ix.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM scope_refs WHERE name = ?`, name); err != nil {
			return dbFault(err, "replacing the scope")
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO scopes(name) VALUES(?)`, name); err != nil {
			return dbFault(err, "defining the scope")
		}
		st, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO scope_refs(name, ref) VALUES(?, ?)`)
		if err != nil {
			return dbFault(err, "defining the scope")
		}
		defer st.Close()
		for _, r := range refs {
			if _, err := st.ExecContext(ctx, name, r); err != nil {
				return dbFault(err, "defining the scope")
			}
		}
		return nil
	})
}
