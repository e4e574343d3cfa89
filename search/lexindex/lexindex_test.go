package lexindex

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func newIndex(t testing.TB) (*Index, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "index.db")
	ix, err := Open(context.Background(), path, &Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix, path
}

// must returns v, failing the test (by panicking) on err.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func put(ref, text string) Mutation { return Mutation{Ref: ref, Text: text} }

func refs(r *Result) []string {
	out := []string{}
	for _, h := range r.Hits {
		out = append(out, h.Ref)
	}
	return out
}

func TestAddSearchRemove(t *testing.T) {
	ctx := context.Background()
	ix, _ := newIndex(t)
	got := must(ix.Apply(ctx, []Mutation{
		put("a", "the quick brown fox jumps over the lazy dog"),
		put("b", "a quick brown dog; a quick, quick fox"),
		put("c", "nothing to see here"),
	}))
	if got != (Applied{Added: 3}) {
		t.Fatalf("%+v", got)
	}
	cases := []struct {
		q    Query
		want []string
	}{
		{Query{Text: "quick fox"}, []string{"b", "a"}},
		{Query{Text: "brown fox", Mode: Phrase}, []string{"a"}},
		{Query{Text: "quick NOT lazy", Mode: FTS}, []string{"b"}},
		{Query{Text: "NEAR(quick dog, 2)", Mode: FTS}, []string{"b"}},
		{Query{Text: "body:see OR lazy", Mode: FTS}, []string{"c", "a"}},
		{Query{Text: "qui*", Mode: FTS}, []string{"b", "a"}},
		{Query{Text: "absent"}, []string{}},
		{Query{Text: "quick", Limit: 1}, []string{"b"}},
	}
	for _, c := range cases {
		r := must(ix.Search(ctx, c.q))
		if !slices.Equal(refs(r), c.want) {
			t.Errorf("%+v: %v, want %v", c.q, refs(r), c.want)
		}
	}
	r := must(ix.Search(ctx, Query{Text: "lazy", Snippets: true}))
	if len(r.Hits) != 1 || !strings.Contains(r.Hits[0].Snippet, "«lazy»") || r.Hits[0].Score <= 0 || r.Hits[0].Digest != Digest("the quick brown fox jumps over the lazy dog") {
		t.Fatalf("%+v", r.Hits)
	}
	must(ix.Apply(ctx, []Mutation{{Ref: "a", Remove: true}}))
	if r := must(ix.Search(ctx, Query{Text: "lazy"})); len(r.Hits) != 0 {
		t.Fatalf("removed document found: %+v", r.Hits)
	}
}

func TestDigestsAndConflicts(t *testing.T) {
	ctx := context.Background()
	ix, _ := newIndex(t)
	must(ix.Apply(ctx, []Mutation{{Ref: "doc", Text: "version one", Digest: "d1"}}))
	cases := []struct {
		name  string
		batch []Mutation
		code  fault.Code
		want  Applied
	}{
		{"replace expecting the held digest", []Mutation{{Ref: "doc", Text: "version two", Digest: "d2", Expect: "d1"}}, "", Applied{Replaced: 1}},
		{"replace expecting a stale digest", []Mutation{{Ref: "doc", Text: "version three", Digest: "d3", Expect: "d1"}}, fault.Conflict, Applied{}},
		{"expecting a document that is absent", []Mutation{{Ref: "new", Text: "x", Expect: "d1"}}, fault.Conflict, Applied{}},
		{"same digest again", []Mutation{{Ref: "doc", Text: "version two", Digest: "d2"}}, "", Applied{Unchanged: 1}},
		{"remove expecting a stale digest", []Mutation{{Ref: "doc", Remove: true, Expect: "d1"}}, fault.Conflict, Applied{}},
		{"remove an absent ref", []Mutation{{Ref: "nope", Remove: true}}, fault.NotFound, Applied{}},
		{"a failing batch changes nothing", []Mutation{put("other", "fresh text"), {Ref: "doc", Text: "x", Expect: "zz"}}, fault.Conflict, Applied{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ix.Apply(ctx, c.batch)
			if fault.CodeOf(err) != c.code || err == nil && got != c.want {
				t.Fatalf("%+v %v, want %+v %q", got, err, c.want, c.code)
			}
		})
	}
	st := must(ix.Status(ctx, StatusRequest{Refs: []RefDigest{{Ref: "doc", Current: "d2"}, {Ref: "doc", Current: "d9"}, {Ref: "other", Current: "x"}, {Ref: "doc"}}}))
	stale := func(i int) bool { return *st.Refs[i].Stale }
	if st.Documents != 1 || !st.Refs[0].Indexed || st.Refs[0].Digest != "d2" || stale(0) || !stale(1) || st.Refs[2].Indexed || !stale(2) || st.Refs[3].Stale != nil {
		t.Fatalf("%+v", st)
	}
	if r := must(ix.Search(ctx, Query{Text: "fresh"})); len(r.Hits) != 0 {
		t.Fatal("a refused batch left a document behind")
	}
	if r := must(ix.Search(ctx, Query{Text: "two"})); len(r.Hits) != 1 {
		t.Fatal("the replacement is not searchable")
	}
}

func TestOneRefTwiceInABatch(t *testing.T) {
	ctx := context.Background()
	ix, _ := newIndex(t)
	got := must(ix.Apply(ctx, []Mutation{put("x", "first text"), put("x", "second text"), put("y", "gone soon"), {Ref: "y", Remove: true}}))
	if got != (Applied{Added: 2, Replaced: 1, Removed: 1}) {
		t.Fatalf("%+v", got)
	}
	for q, want := range map[string]int{"first": 0, "second": 1, "gone": 0} {
		if r := must(ix.Search(ctx, Query{Text: q})); len(r.Hits) != want {
			t.Fatalf("%q: %v", q, refs(r))
		}
	}
}

func TestStatusListing(t *testing.T) {
	ctx := context.Background()
	ix, _ := newIndex(t)
	var batch []Mutation
	for i := range 25 {
		batch = append(batch, put(fmt.Sprintf("r%02d", i), "text"))
	}
	must(ix.Apply(ctx, batch))
	var all []string
	for after := ""; ; {
		st := must(ix.Status(ctx, StatusRequest{After: after, Limit: 10}))
		for _, d := range st.Refs {
			all = append(all, d.Ref)
		}
		if st.Next == "" {
			break
		}
		after = st.Next
	}
	if len(all) != 25 || all[0] != "r00" || all[24] != "r24" {
		t.Fatalf("%v", all)
	}
}

func TestBounds(t *testing.T) {
	ctx := context.Background()
	ix, _ := newIndex(t)
	long := strings.Repeat("x", limits.LexMaxRefBytes)
	doc := strings.Repeat("word ", limits.LexMaxDocumentBytes/5)
	doc += strings.Repeat("x", limits.LexMaxDocumentBytes-len(doc))
	cases := []struct {
		name  string
		batch []Mutation
		code  fault.Code
	}{
		{"document at its bound", []Mutation{put("big", doc)}, ""},
		{"document past its bound", []Mutation{put("big2", doc+"x")}, fault.Limit},
		{"ref at its bound", []Mutation{put(long, "x")}, ""},
		{"ref past its bound", []Mutation{put(long+"x", "x")}, fault.Limit},
		{"empty ref", []Mutation{put("", "x")}, fault.InvalidInput},
		{"ref with NUL", []Mutation{put("a\x00b", "x")}, fault.InvalidInput},
		{"text not UTF-8", []Mutation{put("bad", "a\xffb")}, fault.InvalidInput},
		{"digest at its bound", []Mutation{{Ref: "d", Text: "x", Digest: strings.Repeat("f", limits.LexMaxDigestBytes)}}, ""},
		{"digest past its bound", []Mutation{{Ref: "d2", Text: "x", Digest: strings.Repeat("f", limits.LexMaxDigestBytes+1)}}, fault.Limit},
		{"digest with a space", []Mutation{{Ref: "d3", Text: "x", Digest: "a b"}}, fault.InvalidInput},
		{"remove with text", []Mutation{{Ref: "d", Remove: true, Text: "x"}}, fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ix.Apply(ctx, c.batch); fault.CodeOf(err) != c.code {
				t.Fatalf("%v, want %q", err, c.code)
			}
		})
	}
	if len(doc) != limits.LexMaxDocumentBytes {
		t.Fatalf("the document at the bound is %d bytes", len(doc))
	}
	qcases := []struct {
		name string
		q    Query
		code fault.Code
	}{
		{"limit at its bound", Query{Text: "word", Limit: limits.LexMaxHits}, ""},
		{"limit past its bound", Query{Text: "word", Limit: limits.LexMaxHits + 1}, fault.Limit},
		{"negative limit", Query{Text: "word", Limit: -1}, fault.InvalidInput},
		{"query at its bound", Query{Text: strings.Repeat("w", limits.LexMaxQueryBytes)}, ""},
		{"query past its bound", Query{Text: strings.Repeat("w", limits.LexMaxQueryBytes+1)}, fault.Limit},
		{"empty query", Query{Text: "  "}, fault.InvalidInput},
		{"unicode space only", Query{Text: "\u00a0"}, fault.InvalidInput},
		{"unknown mode", Query{Text: "w", Mode: "regex"}, fault.InvalidInput},
		{"unknown scope", Query{Text: "w", Scope: "nope"}, fault.NotFound},
		{"malformed fts", Query{Text: "word AND (", Mode: FTS}, fault.InvalidInput},
		{"phrase with quotes", Query{Text: `say "word"`, Mode: Phrase}, ""},
		{"terms with operators", Query{Text: `word AND NOT ( "`}, ""},
	}
	for _, c := range qcases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ix.Search(ctx, c.q); fault.CodeOf(err) != c.code {
				t.Fatalf("%v, want %q", err, c.code)
			}
		})
	}
	if _, err := ix.Status(ctx, StatusRequest{Limit: limits.LexMaxStatusRefs}); err != nil {
		t.Fatalf("listing limit at its bound: %v", err)
	}
	if _, err := ix.Status(ctx, StatusRequest{Limit: limits.LexMaxStatusRefs + 1}); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("listing limit past its bound: %v", err)
	}
	if _, err := ix.Status(ctx, StatusRequest{Refs: make([]RefDigest, limits.LexMaxStatusRefs+1)}); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("status past its bound: %v", err)
	}
	at := make([]RefDigest, limits.LexMaxStatusRefs)
	for i := range at {
		at[i].Ref = fmt.Sprint(i)
	}
	if _, err := ix.Status(ctx, StatusRequest{Refs: at}); err != nil {
		t.Fatalf("status at its bound: %v", err)
	}
}

// TestScopeFiltersBeforeLimit fills the best ranks with documents outside
// the scope: a scoped search must still return the scope's hits.
func TestScopeFiltersBeforeLimit(t *testing.T) {
	ctx := context.Background()
	ix, _ := newIndex(t)
	var batch []Mutation
	for i := range 300 {
		// Outside the scope: dense matches, the best bm25 scores.
		batch = append(batch, put(fmt.Sprintf("out%03d", i), "secret secret secret"))
	}
	var scope []string
	for i := range 5 {
		ref := fmt.Sprintf("in%d", i)
		scope = append(scope, ref)
		batch = append(batch, put(ref, "secret "+strings.Repeat("filler ", 50+i)))
	}
	must(ix.Apply(ctx, batch))
	if err := ix.SetScope(ctx, "mine", append(scope, "not-indexed-yet")); err != nil {
		t.Fatal(err)
	}
	r := must(ix.Search(ctx, Query{Text: "secret", Scope: "mine", Limit: 3}))
	if !slices.Equal(refs(r), []string{"in0", "in1", "in2"}) {
		t.Fatalf("scoped hits %v", refs(r))
	}
	// Scores come from the whole database's statistics: the same as an
	// unscoped search gives the same document.
	all := must(ix.Search(ctx, Query{Text: "secret", Limit: limits.LexMaxHits}))
	for _, h := range all.Hits {
		if h.Ref == "in0" && h.Score != r.Hits[0].Score {
			t.Fatalf("scoped score %v, unscoped %v", r.Hits[0].Score, h.Score)
		}
	}
	if r := must(ix.Search(ctx, Query{Text: "secret", Limit: 3})); slices.Contains(refs(r), "in0") {
		t.Fatal("the test does not fill the best ranks from outside the scope")
	}
	if err := ix.SetScope(ctx, "mine", []string{"in4"}); err != nil {
		t.Fatal(err)
	}
	if r := must(ix.Search(ctx, Query{Text: "secret", Scope: "mine"})); !slices.Equal(refs(r), []string{"in4"}) {
		t.Fatalf("replaced scope: %v", refs(r))
	}
	if err := ix.RemoveScope(ctx, "mine"); err != nil {
		t.Fatal(err)
	}
	if err := ix.RemoveScope(ctx, "mine"); fault.CodeOf(err) != fault.NotFound {
		t.Fatalf("removing a missing scope: %v", err)
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Open(ctx, filepath.Join(dir, "missing.db"), nil); fault.CodeOf(err) != fault.NotFound {
		t.Fatalf("missing: %v", err)
	}
	p := filepath.Join(dir, "porter.db")
	ix := must(Open(ctx, p, &Options{Create: true, Tokenizer: "porter unicode61"}))
	must(ix.Apply(ctx, []Mutation{put("a", "running runners")}))
	ix.Close()
	ix = must(Open(ctx, p, nil))
	defer ix.Close()
	if ix.Tokenizer != "porter unicode61" {
		t.Fatalf("tokenizer %q", ix.Tokenizer)
	}
	if r := must(ix.Search(ctx, Query{Text: "run"})); len(r.Hits) != 1 {
		t.Fatal("the database's own tokenizer is not used")
	}
	for _, tok := range []string{"icu", "unicode61 'x'); DROP TABLE docs; --", ""} {
		if _, err := Open(ctx, filepath.Join(dir, "t.db"), &Options{Create: true, Tokenizer: tok + " "}); fault.CodeOf(err) != fault.InvalidInput {
			t.Fatalf("tokenizer %q: %v", tok, err)
		}
	}
	if err := writeFile(filepath.Join(dir, "text.db"), "not a database, just text that is long enough to be a header"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, filepath.Join(dir, "text.db"), nil); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("not a database: %v", err)
	}
}

func TestScoreTexts(t *testing.T) {
	for _, c := range []struct {
		scores []float64
		want   []string
	}{
		{[]float64{2.104829249431487e-06, 1.8815789473684213e-06}, []string{"2.105e-06", "1.882e-06"}},
		{[]float64{3.25, 1.5, 1.5}, []string{"3.25", "1.5", "1.5"}},
		{[]float64{1.000012, 1.000011}, []string{"1.000012", "1.000011"}},
		{[]float64{}, []string{}},
	} {
		hits := make([]Hit, len(c.scores))
		for i, s := range c.scores {
			hits[i].Score = s
		}
		if got := scoreTexts(hits); !slices.Equal(got, c.want) {
			t.Errorf("scoreTexts(%v) = %q, want %q", c.scores, got, c.want)
		}
	}
}
