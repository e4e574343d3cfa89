package host

import (
	"context"
	"slices"
	"strings"

	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/search/lexindex"
)

// toolIndex ranks tool_search's candidates in a large catalog (hundreds
// of upstream tools) with the lexical index: FTS5's BM25 over each tool's
// name (its words), title and description, stemmed (porter), in an
// in-memory database made once from the frozen catalog.
type toolIndex struct {
	ix      *lexindex.Index
	entries map[string]*catalog.Entry
	byName  []*catalog.Entry
}

// newToolIndex is the kernel's Options.ToolIndex.
func newToolIndex(entries []*catalog.Entry) (kernel.ToolIndex, error) {
	ctx := context.Background()
	ix, err := lexindex.Open(ctx, ":memory:", &lexindex.Options{Create: true, Tokenizer: "porter unicode61"})
	if err != nil {
		return nil, err
	}
	t := &toolIndex{ix: ix, entries: map[string]*catalog.Entry{}}
	batch := make([]lexindex.Mutation, 0, len(entries))
	for _, e := range entries {
		t.entries[e.Name] = e
		t.byName = append(t.byName, e)
		text := strings.NewReplacer("_", " ", "-", " ").Replace(e.Name) + "\n" + e.Hints().Title + "\n" + e.Description
		batch = append(batch, lexindex.Mutation{Ref: e.Name, Text: text})
	}
	slices.SortFunc(t.byName, func(a, b *catalog.Entry) int { return strings.Compare(a.Name, b.Name) })
	if _, err := ix.Apply(ctx, batch); err != nil {
		ix.Close()
		return nil, err
	}
	return t, nil
}

// Rank returns the best limit entries keep accepts: any of the query's
// words (BM25 ranks those with more of them, and rarer ones, first); an
// empty query lists them in name order.
func (t *toolIndex) Rank(ctx context.Context, query string, limit int, keep func(*catalog.Entry) bool) ([]*catalog.Entry, error) {
	var terms []string
	for _, w := range strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
	}) {
		terms = append(terms, `"`+w+`"`)
	}
	var out []*catalog.Entry
	if len(terms) == 0 {
		for _, e := range t.byName {
			if len(out) < limit && keep(e) {
				out = append(out, e)
			}
		}
		return out, nil
	}
	res, err := t.ix.Search(ctx, lexindex.Query{Text: strings.Join(terms, " OR "), Mode: lexindex.FTS, Limit: min(max(len(t.entries), 1), limits.LexMaxHits)})
	if err != nil {
		return nil, err
	}
	for _, h := range res.Hits {
		if e := t.entries[h.Ref]; e != nil && len(out) < limit && keep(e) {
			out = append(out, e)
		}
	}
	return out, nil
}
