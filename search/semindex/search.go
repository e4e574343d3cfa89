package semindex

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"
	"sync/atomic"

	sqlite "modernc.org/sqlite"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/search/semindex/bert"
)

// cosineFunc is the SQL function semindex_cosine(vec, query_id): the exact
// cosine of a stored vector and a query registered under query_id for the
// duration of one search.
const cosineFunc = "semindex_cosine"

type activeQuery struct {
	v       []float32
	norm    float64
	scanned atomic.Int64
}

var (
	queries   sync.Map // int64 → *activeQuery
	nextQuery atomic.Int64
	register  sync.Once
)

func registerOnce() {
	register.Do(func() {
		sqlite.MustRegisterFunction(cosineFunc, &sqlite.FunctionImpl{
			NArgs: 2, Deterministic: true, VolatileArgs: true,
			Scalar: func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
				v, _ := args[0].([]byte)
				id, _ := args[1].(int64)
				q, ok := queries.Load(id)
				if !ok {
					return nil, fmt.Errorf("%s: no active query %d", cosineFunc, id)
				}
				aq := q.(*activeQuery)
				aq.scanned.Add(1)
				return cosine(v, aq.v, aq.norm), nil
			},
		})
	})
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

// rank scores every chunk in scope against qv inside SQLite.
func (ix *Index) rank(ctx context.Context, qv []float32, o *SearchOptions, limit int) (*SearchResult, error) {
	aq := &activeQuery{v: qv, norm: norm(qv)}
	id := nextQuery.Add(1)
	queries.Store(id, aq)
	defer queries.Delete(id)
	rows, err := ix.db.QueryContext(ctx, searchSQL(o.Scope != "", o.WithText), searchArgs(id, o.Scope, limit)...)
	if err != nil {
		return nil, dbFault(err, "searching")
	}
	defer rows.Close()
	res := &SearchResult{Hits: []Hit{}, Scope: o.Scope}
	for rows.Next() {
		var h Hit
		dst := []any{&h.Ref, &h.Start, &h.End, &h.Score}
		if o.WithText {
			dst = append(dst, &h.Text)
		}
		if err := rows.Scan(dst...); err != nil {
			return nil, dbFault(err, "reading hits")
		}
		res.Hits = append(res.Hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, dbFault(err, "searching")
	}
	res.Scanned = aq.scanned.Load()
	return res, nil
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

// searchSQL ranks the chunks alone (the refs of the winners are looked up
// after the limit); a scope is the set of its refs' ids, filtered before
// the limit.
func searchSQL(scoped, withText bool) string {
	inner := "SELECT id, ref_id, cstart, cend, " + cosineFunc + "(vec, ?1) AS score FROM chunks"
	if scoped {
		inner += " WHERE ref_id IN (SELECT r.id FROM refs r JOIN scope_refs sr ON sr.ref = r.ref WHERE sr.name = ?2)"
	}
	inner += " ORDER BY score DESC, id LIMIT ?3"
	cols := "r.ref, t.cstart, t.cend, t.score"
	from := " FROM (" + inner + ") t JOIN refs r ON r.id = t.ref_id"
	if withText {
		cols += ", substr(s.text, t.cstart + 1, t.cend - t.cstart)"
		from += " JOIN sources s ON s.ref_id = t.ref_id"
	}
	return "SELECT " + cols + from + " ORDER BY t.score DESC, t.id"
}

func searchArgs(id int64, scope string, limit int) []any {
	return []any{id, scope, limit}
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
