package semindex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/search/semindex/bert"
)

// The tiny random BERT of bert/testdata (see gen_fixture.py there).
const (
	tinyDir    = "bert/testdata/tiny"
	tinyDigest = "776bd478161ed9031ef3ec1a88b1ea13118c2582f02631d2ec81cfcf8e578be8"
)

var (
	tinyOnce  sync.Once
	tinyModel *bert.Model
	tinyErr   error
)

func tiny(t testing.TB) *bert.Model {
	t.Helper()
	tinyOnce.Do(func() {
		tinyModel, tinyErr = bert.Load(context.Background(), tinyDir, &bert.Options{Pin: tinyDigest})
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tinyModel
}

func openTemp(t testing.TB) (*Index, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sem.db")
	ix, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix, path
}

var docs = map[string]string{
	"fox":    "The quick brown fox jumps over the lazy dog.",
	"cafe":   "Café naïve résumé: crème brûlée in a façade.",
	"tokyo":  "東京タワーは高い！ I like Tokyo at night.",
	"number": "Numbers like 3.14 and 100% are not words.",
}

func addDocs(t testing.TB, ix *Index, m *bert.Model) {
	t.Helper()
	for ref, text := range docs {
		if _, err := ix.Add(context.Background(), m, ref, text, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func wantCode(t *testing.T, what string, err error, code fault.Code) {
	t.Helper()
	if fault.CodeOf(err) != code {
		t.Errorf("%s: %v, want %s", what, err, code)
	}
}

func TestAddSearch(t *testing.T) {
	ctx := context.Background()
	m := tiny(t)
	ix, _ := openTemp(t)
	addDocs(t, ix, m)
	res, err := ix.Search(ctx, m, docs["cafe"], &SearchOptions{Limit: 10, WithText: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Scanned != int64(len(docs)) || len(res.Hits) != len(docs) {
		t.Fatalf("scanned %d, %d hits; want every chunk (%d)", res.Scanned, len(res.Hits), len(docs))
	}
	top := res.Hits[0]
	if top.Ref != "cafe" || top.Score < 0.99999 || top.Start != 0 || top.End != utf8.RuneCountInString(docs["cafe"]) || top.Text != docs["cafe"] {
		t.Errorf("top hit %+v; want cafe at score 1 spanning the whole text", top)
	}
	for i := 1; i < len(res.Hits); i++ {
		if res.Hits[i].Score > res.Hits[i-1].Score {
			t.Errorf("hits out of order: %+v", res.Hits)
		}
	}
	if res.Model != tinyDigest {
		t.Errorf("model %s", res.Model)
	}
}

func TestLongSourceSpans(t *testing.T) {
	ctx := context.Background()
	m := tiny(t)
	ix, _ := openTemp(t)
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "Sentence %d about naïve façades and 東京 towers. ", i)
	}
	text := b.String()
	res, err := ix.Add(ctx, m, "long", text, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Chunks < 2 || res.Pieces <= limits.SemWindow {
		t.Fatalf("%+v: want several chunks", res)
	}
	hits, err := ix.Search(ctx, m, "naïve façades", &SearchOptions{Limit: limits.SemSearchMaxHits, WithText: true})
	if err != nil {
		t.Fatal(err)
	}
	runes := []rune(text)
	prevEnd := map[int]bool{}
	for _, h := range hits.Hits {
		if h.Start < 0 || h.End > len(runes) || h.Start >= h.End || string(runes[h.Start:h.End]) != h.Text {
			t.Fatalf("hit %+v does not map back to the source", h)
		}
		prevEnd[h.Start] = true
	}
	if len(hits.Hits) != res.Chunks {
		t.Errorf("%d hits for %d chunks", len(hits.Hits), res.Chunks)
	}
}

func TestScopeFiltersBeforeLimit(t *testing.T) {
	ctx := context.Background()
	m := tiny(t)
	ix, _ := openTemp(t)
	addDocs(t, ix, m)
	for i := range 20 {
		if _, err := ix.Add(ctx, m, fmt.Sprintf("copy%d", i), docs["cafe"], nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.SetScope(ctx, "allowed", []string{"fox", "tokyo", "not-yet-indexed"}); err != nil {
		t.Fatal(err)
	}
	res, err := ix.Search(ctx, m, docs["cafe"], &SearchOptions{Scope: "allowed", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 || (res.Hits[0].Ref != "fox" && res.Hits[0].Ref != "tokyo") || res.Scanned != 2 {
		t.Fatalf("scoped search: %+v; want one hit from the scope after scanning its 2 chunks", res)
	}
	_, err = ix.Search(ctx, m, "x", &SearchOptions{Scope: "nope"})
	wantCode(t, "unknown scope", err, fault.NotFound)
	if err := ix.SetScope(ctx, "allowed", nil); err != nil {
		t.Fatal(err)
	}
	res, err = ix.Search(ctx, m, "x", &SearchOptions{Scope: "allowed"})
	if err != nil || len(res.Hits) != 0 {
		t.Fatalf("emptied scope: %+v %v", res, err)
	}
}

func TestBounds(t *testing.T) {
	ctx := context.Background()
	m := tiny(t)
	ix, _ := openTemp(t)
	addDocs(t, ix, m)
	for _, c := range []struct {
		limit int
		code  fault.Code
	}{{0, ""}, {limits.SemSearchMaxHits, ""}, {limits.SemSearchMaxHits + 1, fault.Limit}, {-1, fault.InvalidInput}} {
		_, err := ix.Search(ctx, m, "fox", &SearchOptions{Limit: c.limit})
		wantCode(t, fmt.Sprint("limit ", c.limit), err, c.code)
	}
	long := strings.Repeat("fox ", m.MaxPieces())
	_, err := ix.Search(ctx, m, long, nil)
	wantCode(t, "query at the window", err, "")
	_, err = ix.Search(ctx, m, long+"fox", nil)
	wantCode(t, "query one piece past the window", err, fault.Limit)

	ref := strings.Repeat("r", limits.SemRefMaxBytes)
	_, err = ix.Add(ctx, m, ref, "x", nil)
	wantCode(t, "ref at the limit", err, "")
	_, err = ix.Add(ctx, m, ref+"r", "x", nil)
	wantCode(t, "ref one past", err, fault.InvalidInput)
	_, err = ix.Add(ctx, m, "bad", "\xff", nil)
	wantCode(t, "invalid UTF-8", err, fault.InvalidInput)

	// Words longer than the tokenizer's word limit are one [UNK] each, so
	// the largest source stays quick to embed.
	word := strings.Repeat("a", 199) + " "
	src := strings.Repeat(word, limits.SemSourceMaxBytes/len(word)) + strings.Repeat("c", limits.SemSourceMaxBytes%len(word))
	_, err = ix.Add(ctx, m, "big", src, nil)
	wantCode(t, "source at the limit", err, "")
	_, err = ix.Add(ctx, m, "big2", src+"d", nil)
	wantCode(t, "source one past", err, fault.Limit)
	name := strings.Repeat("n", limits.SemScopeNameMaxBytes)
	wantCode(t, "scope name at the limit", ix.SetScope(ctx, name, []string{"fox"}), "")
	wantCode(t, "scope name one past", ix.SetScope(ctx, name+"n", []string{"fox"}), fault.InvalidInput)
	refs := make([]string, limits.SemScopeMaxRefs+1)
	for i := range refs {
		refs[i] = fmt.Sprint("r", i)
	}
	wantCode(t, "scope refs at the limit", ix.SetScope(ctx, "s", refs[:limits.SemScopeMaxRefs]), "")
	wantCode(t, "scope refs one past", ix.SetScope(ctx, "s", refs), fault.Limit)
	st, _ := ix.Status(ctx, &StatusOptions{Refs: []string{"big2"}})
	if st.Entries[0].Indexed {
		t.Error("a refused source was indexed")
	}
}

func TestDigestsAndStatus(t *testing.T) {
	ctx := context.Background()
	m := tiny(t)
	ix, _ := openTemp(t)
	if _, err := ix.Add(ctx, m, "a", "first text", &AddOptions{Digest: "v1"}); err != nil {
		t.Fatal(err)
	}
	_, err := ix.Add(ctx, m, "a", "second text", &AddOptions{Digest: "v2", ExpectDigest: "v0"})
	wantCode(t, "stale expectation", err, fault.Conflict)
	_, err = ix.Add(ctx, m, "b", "text", &AddOptions{ExpectDigest: "v0"})
	wantCode(t, "expectation on a missing ref", err, fault.Conflict)
	r, err := ix.Add(ctx, m, "a", "second text", &AddOptions{Digest: "v2", ExpectDigest: "v1"})
	if err != nil || !r.Replaced {
		t.Fatalf("replace: %+v %v", r, err)
	}
	st, err := ix.Status(ctx, &StatusOptions{Refs: []string{"a", "b"}, Current: map[string]string{"a": "v3", "b": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if st.ModelDigest != tinyDigest || st.Refs != 1 || st.Chunks != 1 || st.Window != limits.SemWindow || st.Dim != m.Dim() {
		t.Errorf("status %+v", st)
	}
	a, b := st.Entries[0], st.Entries[1]
	if !a.Indexed || a.Digest != "v2" || a.Stale == nil || !*a.Stale || b.Indexed || b.Stale == nil || !*b.Stale {
		t.Errorf("entries %+v %+v", a, b)
	}
	wantCode(t, "remove with a stale digest", ix.Remove(ctx, "a", "v1"), fault.Conflict)
	wantCode(t, "remove", ix.Remove(ctx, "a", "v2"), "")
	wantCode(t, "remove again", ix.Remove(ctx, "a", ""), fault.NotFound)
	st, _ = ix.Status(ctx, nil)
	if st.Refs != 0 || st.Chunks != 0 || len(st.Entries) != 0 {
		t.Errorf("after remove: %+v", st)
	}
}

// otherModel is the tiny model with one weight changed: another digest.
func otherModel(t *testing.T) *bert.Model {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{bert.ConfigFile, bert.TokenizerFile, bert.WeightsFile} {
		data, err := os.ReadFile(filepath.Join(tinyDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == bert.WeightsFile {
			data[len(data)-1] ^= 1
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, bert.WeightsFile))
	m, err := bert.Load(context.Background(), dir, &bert.Options{Pin: TextDigest(string(data))})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestModelBinding(t *testing.T) {
	ctx := context.Background()
	ix, _ := openTemp(t)
	addDocs(t, ix, tiny(t))
	other := otherModel(t)
	_, err := ix.Add(ctx, other, "x", "text", nil)
	wantCode(t, "add with another model", err, fault.Conflict)
	_, err = ix.Search(ctx, other, "text", nil)
	wantCode(t, "search with another model", err, fault.Conflict)
	_, err = ix.Audit(ctx, other)
	wantCode(t, "audit with another model", err, fault.Conflict)
}

func TestAudit(t *testing.T) {
	ctx := context.Background()
	m := tiny(t)
	ix, _ := openTemp(t)
	addDocs(t, ix, m)
	rep, err := ix.Audit(ctx, m)
	if err != nil || !rep.OK || !rep.Full || rep.Refs != len(docs) || rep.Chunks != len(docs) {
		t.Fatalf("clean audit: %+v %v", rep, err)
	}
	zeroVectors(t, ix, "fox")
	if _, err := ix.db.ExecContext(ctx, `UPDATE chunks SET cend = cend - 1 WHERE ref_id = (SELECT id FROM refs WHERE ref = 'tokyo')`); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.db.ExecContext(ctx, `UPDATE sources SET text = 'changed' WHERE ref_id = (SELECT id FROM refs WHERE ref = 'cafe')`); err != nil {
		t.Fatal(err)
	}
	rep, err = ix.Audit(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, p := range rep.Problems {
		got[p.Ref] = true
	}
	if rep.OK || !got["fox"] || !got["tokyo"] || !got["cafe"] || got["number"] {
		t.Errorf("tampered audit: %+v", rep)
	}
	st, _ := ix.Status(ctx, nil)
	if st.Note != StatusNote {
		t.Error("status does not say it is not the audit")
	}
}

func TestOpenIn(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	outside := t.TempDir()
	ix, err := OpenIn(ctx, []string{root}, "idx.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	addDocs(t, ix, tiny(t))
	ix.Close()
	if _, err := os.Stat(filepath.Join(root, "idx.db")); err != nil {
		t.Fatalf("index not created in the root: %v", err)
	}
	_, err = OpenIn(ctx, []string{root}, "missing.db", &OpenOptions{NoCreate: true})
	wantCode(t, "missing index, no create", err, fault.NotFound)
	if _, err := os.Stat(filepath.Join(root, "missing.db")); !errors.Is(err, os.ErrNotExist) {
		t.Error("NoCreate created the index")
	}
	_, err = OpenIn(ctx, []string{root}, filepath.Join(outside, "x.db"), nil)
	wantCode(t, "outside the root", err, fault.Denied)
	_, err = OpenIn(ctx, []string{root}, "../x.db", nil)
	wantCode(t, "climbing out", err, fault.Denied)
	if err := os.Symlink(filepath.Join(outside, "y.db"), filepath.Join(root, "link.db")); err != nil {
		t.Fatal(err)
	}
	_, err = OpenIn(ctx, []string{root}, "link.db", nil)
	wantCode(t, "symlink as the database", err, fault.InvalidInput)
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	_, err = OpenIn(ctx, []string{root}, "out/z.db", nil)
	if err == nil {
		t.Error("a symlinked directory leading out of the root was followed")
	}
	if _, err := os.Stat(filepath.Join(outside, "z.db")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a database was created outside the root")
	}
}

func TestNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not sqlite ", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), path, nil)
	wantCode(t, "junk file", err, fault.InvalidInput)
}
