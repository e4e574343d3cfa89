package textarchive

import (
	"context"
	"strconv"
	"strings"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/search/lexindex"
)

// SearchQuery is a lexical search of current versions.
type SearchQuery struct {
	Text string
	// Mode is lexindex's: "terms" (default: every term), "phrase", or
	// "fts" (FTS5's query language, checked before SQLite sees it).
	Mode string
	// Collection, when set, restricts hits to it (inside the ranking).
	Collection string
	// Limit is 1..limits.ArchiveMaxRecords; zero means
	// limits.ArchiveDefaultRecords. Offset skips ranked hits, at most
	// limits.ArchiveMaxSearchOffset.
	Limit, Offset int
	// Snippets asks for an excerpt of each hit, matches in «».
	Snippets bool
}

// SearchHit is one part of a current version, ranked, with where it is.
type SearchHit struct {
	Collection string `json:"collection"`
	Item       string `json:"item"`
	Version    string `json:"version"`
	Seq        int64  `json:"seq"`
	Part       int    `json:"part"`
	// PartSHA256 and PartChars are the part's text digest and length in
	// code points (what a citation of it names).
	PartSHA256 string `json:"part_sha256"`
	PartChars  int64  `json:"part_chars"`
	Page       string `json:"page,omitempty"`
	Method     string `json:"method,omitempty"`
	Title      string `json:"title,omitempty"`
	SourceURL  string `json:"source_url,omitempty"`
	// Score is BM25's, negated: higher is better.
	Score   float64 `json:"score"`
	Snippet string  `json:"snippet,omitempty"`
}

// SearchResult is a window of ranked hits.
type SearchResult struct {
	// Match is the FTS5 query that ran.
	Match      string      `json:"match"`
	Mode       string      `json:"mode"`
	Collection string      `json:"collection,omitempty"`
	Hits       []SearchHit `json:"hits"`
	Offset     int         `json:"offset,omitzero"`
	// NextOffset, when set, is the offset of the next window: more hits
	// rank after these.
	NextOffset int `json:"next_offset,omitzero"`
}

// Search ranks the parts of current versions by BM25 (the lexical index
// engine's) and returns a window of hits with their provenance.
func (a *Archive) Search(ctx context.Context, q SearchQuery) (*SearchResult, error) {
	if q.Collection != "" {
		if err := checkCollection(q.Collection); err != nil {
			return nil, err
		}
	}
	limit, err := window(q.Limit, q.Offset, limits.ArchiveMaxSearchOffset)
	if err != nil {
		return nil, err
	}
	lq := lexindex.Query{Text: q.Text, Mode: q.Mode, Limit: limit + 1, Offset: q.Offset, Snippets: q.Snippets}
	if q.Collection != "" {
		lq.Prefix = q.Collection + "/"
	}
	var out *SearchResult
	err = a.locked(func() error {
		return a.read(ctx, "searching the archive", func(t *txn) error {
			res, err := a.ix.Search(ctx, lq)
			if err != nil {
				return err
			}
			out = &SearchResult{Match: res.Match, Mode: res.Mode, Collection: q.Collection, Hits: []SearchHit{}, Offset: q.Offset}
			if len(res.Hits) > limit {
				res.Hits, out.NextOffset = res.Hits[:limit], q.Offset+limit
			}
			for _, h := range res.Hits {
				hit, err := provenance(t, h)
				if err != nil {
					return err
				}
				out.Hits = append(out.Hits, hit)
			}
			return nil
		})
	})
	return out, err
}

// provenance links an index hit to its version and part.
func provenance(t *txn, h lexindex.Hit) (SearchHit, error) {
	hit := SearchHit{Score: h.Score, Snippet: h.Snippet, PartSHA256: h.Digest}
	rest, idx, ok := cutLast(h.Ref)
	collection, v, ok2 := cutLast(rest)
	id, err := parseVersionRef(v)
	n, nerr := strconv.Atoi(idx)
	if !ok || !ok2 || err != nil || nerr != nil {
		return hit, fault.New(fault.Integrity, "the index holds an entry %q of no version: run capkit archive audit", h.Ref)
	}
	hit.Collection, hit.Version, hit.Part = collection, v, n
	err = t.row(`SELECT i.name, v.seq, v.title, v.source_url, p.chars, p.page, p.method
		FROM versions AS v JOIN items AS i ON i.id = v.item JOIN parts AS p ON p.version = v.id AND p.idx = ?2 WHERE v.id = ?1`, id, n).
		Scan(&hit.Item, &hit.Seq, &hit.Title, &hit.SourceURL, &hit.PartChars, &hit.Page, &hit.Method)
	if err != nil {
		return hit, fault.Wrap(fault.Integrity, err, "the index holds an entry %q of no stored part: run capkit archive audit", h.Ref)
	}
	return hit, nil
}

func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}
