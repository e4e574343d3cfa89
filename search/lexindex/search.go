package lexindex

import (
	"context"
	"strconv"
	"strings"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/internal/sqlitefault"
	"github.com/capkit/capkit/limits"
)

// The query modes.
const (
	// Terms requires every whitespace-separated term, in any order.
	Terms = "terms"
	// Phrase requires the query's tokens in order, adjacent.
	Phrase = "phrase"
	// FTS takes the query as FTS5's own query language.
	FTS = "fts"
)

// Query is a search.
type Query struct {
	Text string
	// Mode is Terms, Phrase or FTS; empty means Terms.
	Mode string
	// Scope, when set, restricts hits to the refs of that stored scope.
	Scope string
	// Prefix, when set, restricts hits to the refs that start with it,
	// inside the ranked query as a scope does.
	Prefix string
	// Limit is 1..limits.LexMaxHits; zero means limits.LexDefaultHits.
	Limit int
	// Offset skips that many ranked hits first.
	Offset int
	// Snippets asks for an excerpt of each hit, matches in «».
	Snippets bool
}

// Hit is one ranked document.
type Hit struct {
	Ref string `json:"ref"`
	// Score is bm25() negated: higher is better.
	Score   float64 `json:"score"`
	Digest  string  `json:"digest"`
	Snippet string  `json:"snippet,omitempty"`
}

// scoreTexts formats the scores of hits (best first) with the fewest
// significant digits, at least four, at which every two different scores
// read apart: bm25 over a few documents scores near 0.000002.
func scoreTexts(hits []Hit) []string {
	out := make([]string, len(hits))
	for prec := 4; ; prec++ {
		apart := true
		for i, h := range hits {
			out[i] = strconv.FormatFloat(h.Score, 'g', prec, 64)
			if i > 0 && h.Score != hits[i-1].Score && out[i] == out[i-1] {
				apart = false
			}
		}
		if apart || prec == 17 {
			return out
		}
	}
}

// Result is a search's ranked hits, best first.
type Result struct {
	Hits []Hit `json:"hits"`
	// Match is the FTS5 query that ran.
	Match  string `json:"match"`
	Mode   string `json:"mode"`
	Scope  string `json:"scope,omitempty"`
	Prefix string `json:"prefix,omitempty"`
	Limit  int    `json:"limit"`
	Offset int    `json:"offset,omitzero"`
}

// Search runs q.
func (ix *Index) Search(ctx context.Context, q Query) (*Result, error) {
	match, limit, err := prepare(&q)
	if err != nil {
		return nil, err
	}
	res := &Result{Match: match, Mode: q.Mode, Scope: q.Scope, Prefix: q.Prefix, Limit: limit, Offset: q.Offset}
	err = ix.read(ctx, func(tx *txn) error { return searchIn(tx, res, q.Snippets) })
	if err != nil {
		return nil, err
	}
	return res, nil
}

// searchIn fills res, whose query prepare checked, inside tx.
func searchIn(tx *txn, res *Result, withSnippets bool) error {
	res.Hits = []Hit{}
	if err := rank(tx, res); err != nil {
		return err
	}
	if withSnippets {
		return snippets(tx, res)
	}
	return nil
}

func prepare(q *Query) (string, int, error) {
	limit := q.Limit
	switch {
	case limit < 0:
		return "", 0, fault.New(fault.InvalidInput, "limit must be positive")
	case limit > limits.LexMaxHits:
		return "", 0, fault.LimitExceeded("limit", limits.LexMaxHits, int64(limit))
	case limit == 0:
		limit = limits.LexDefaultHits
	}
	if q.Scope != "" {
		if err := checkName("scope name", q.Scope); err != nil {
			return "", 0, err
		}
	}
	if q.Prefix != "" {
		if err := checkName("ref prefix", q.Prefix); err != nil {
			return "", 0, err
		}
	}
	if q.Offset < 0 {
		return "", 0, fault.New(fault.InvalidInput, "offset must not be negative")
	}
	var match string
	var err error
	switch q.Mode {
	case "", Terms:
		q.Mode = Terms
		match, err = termsQuery(q.Text)
	case Phrase:
		match, err = phraseQuery(q.Text)
	case FTS:
		match, err = q.Text, checkFTS(q.Text)
	default:
		err = fault.New(fault.InvalidInput, "mode %q: use %q, %q or %q", clip.Text(q.Mode), Terms, Phrase, FTS)
	}
	return match, limit, err
}

// rank fills res.Hits. Without a scope or prefix the ranked query is
// FTS5's alone and only the hits it returns are joined to their refs;
// with one, the filter is inside the ranked query itself, before its
// limit.
func rank(tx *txn, res *Result) error {
	q := `SELECT d.ref, d.digest, r.score FROM
		(SELECT rowid AS id, bm25(fts) AS score FROM fts WHERE fts MATCH ?1 ORDER BY bm25(fts) LIMIT ?2 OFFSET ?3) AS r
		JOIN docs AS d ON d.id = r.id ORDER BY r.score, d.id`
	args := []any{res.Match, res.Limit, res.Offset}
	switch {
	case res.Scope != "":
		id, err := scopeID(tx, res.Scope)
		if err != nil {
			return err
		}
		q = `SELECT d.ref, d.digest, bm25(fts) AS score FROM fts
			JOIN docs AS d ON d.id = fts.rowid
			JOIN scope_refs AS s ON s.scope = ?4 AND s.ref = d.ref
			WHERE fts MATCH ?1 ORDER BY score, d.id LIMIT ?2 OFFSET ?3`
		args = append(args, id)
	case res.Prefix != "":
		q = `SELECT d.ref, d.digest, bm25(fts) AS score FROM fts
			JOIN docs AS d ON d.id = fts.rowid
			WHERE fts MATCH ?1 AND d.ref >= ?4 AND d.ref < ?5 ORDER BY score, d.id LIMIT ?2 OFFSET ?3`
		args = append(args, res.Prefix, prefixEnd(res.Prefix))
	}
	rows, err := tx.query(q, args...)
	if err != nil {
		return queryFault(err, res.Match)
	}
	defer rows.Close()
	for rows.Next() {
		var h Hit
		if err := rows.Scan(&h.Ref, &h.Digest, &h.Score); err != nil {
			return err
		}
		h.Score = -h.Score
		res.Hits = append(res.Hits, h)
	}
	return queryFault(rows.Err(), res.Match)
}

// prefixEnd is the least string greater than every string that starts
// with p, in SQLite's byte order of text: p with its last byte below 0xff
// incremented and the bytes after it dropped. A ref is valid UTF-8, so
// it holds no 0xff byte; a prefix of only 0xff bytes cannot occur.
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return p
}

// snippets adds an excerpt to each hit.
func snippets(tx *txn, res *Result) error {
	if len(res.Hits) == 0 {
		return nil
	}
	at := make(map[string]int, len(res.Hits))
	refs := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		at[h.Ref] = i
		refs[i] = h.Ref
	}
	rows, err := tx.query(`SELECT d.ref, snippet(fts, 0, '«', '»', '…', ?2) FROM fts JOIN docs AS d ON d.id = fts.rowid
		WHERE fts MATCH ?1 AND d.ref IN (SELECT value FROM json_each(?3))`, res.Match, limits.LexSnippetTokens, jsonStrings(refs))
	if err != nil {
		return queryFault(err, res.Match)
	}
	defer rows.Close()
	for rows.Next() {
		var ref, snip string
		if err := rows.Scan(&ref, &snip); err != nil {
			return err
		}
		res.Hits[at[ref]].Snippet = snip
	}
	return rows.Err()
}

func jsonStrings(ss []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonQuote(s))
	}
	b.WriteByte(']')
	return b.String()
}

// queryFault reports an error SQLite found in a query the checker passed
// (a checker bug, or a limit of SQLite's) as invalid input.
func queryFault(err error, match string) error {
	if err == nil || sqlitefault.Busy(err) {
		return err
	}
	if msg := err.Error(); containsFold(msg, "fts5") || containsFold(msg, "no such column") || containsFold(msg, "syntax error") {
		return fault.Wrap(fault.InvalidInput, err, "fts5 query %q: SQLite refused it: %s", clip.Text(match), msg)
	}
	return err
}
