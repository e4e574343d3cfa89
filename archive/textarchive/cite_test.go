package textarchive

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func cite(t testing.TB, a *Archive, version string, part int, start, length int64) *Cited {
	t.Helper()
	c, err := a.Cite(context.Background(), CiteRequest{Version: version, Part: part, Start: start, Length: length})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCiteCodePoints: offsets are code points, so a span is exact on
// combining marks (e + U+0301), emoji (a ZWJ sequence, a flag, a skin
// tone) and CRLF line ends, and the notes say where a span cuts what a
// reader sees as one character.
func TestCiteCodePoints(t *testing.T) {
	a := newArchive(t)
	text := "Cafe\u0301 au lait.\r\nFamily: 👨‍👩‍👧 flag: 🇳🇱 wave: 👋🏽.\r\nEnd."
	v := addText(t, a, "c", "unicode", "r1", Document{Parts: []Part{{Text: text}}})
	runes := []rune(text)
	span := func(s, n int) string { return string(runes[s : s+n]) }
	cases := []struct {
		name         string
		start, n     int
		notes        int
		wantEndsHere bool
	}{
		{"the word with its combining mark", 0, 5, 0, false},
		{"the base letter without its mark", 3, 1, 1, false},
		{"the combining mark alone", 4, 1, 1, false},
		{"a CRLF whole", 14, 2, 0, false},
		{"between CR and LF", 14, 1, 1, false},
		{"the family emoji whole", 0, 5, 0, false}, // start: below
		{"the flag whole", 0, 2, 0, false},         // start: below
		{"the last character", len(runes) - 1, 1, 0, true},
	}
	// Character indexes of the emoji, from the runes.
	for i, r := range runes {
		switch r {
		case '👨':
			cases[5].start = i
		case '🇳':
			cases[6].start = i
		}
	}
	for _, c := range cases {
		got := cite(t, a, v.Version, 0, int64(c.start), int64(c.n))
		if got.Citation.Quote.Exact != span(c.start, c.n) {
			t.Errorf("%s: %q, want %q", c.name, got.Citation.Quote.Exact, span(c.start, c.n))
		}
		if len(got.Notes) != c.notes {
			t.Errorf("%s: notes %q, want %d", c.name, got.Notes, c.notes)
		}
		if (got.NextStart == 0) != c.wantEndsHere {
			t.Errorf("%s: next start %d", c.name, got.NextStart)
		}
		q := got.Citation.Quote
		if !strings.Contains(text, q.Prefix+q.Exact+q.Suffix) || utf8.RuneCountInString(q.Prefix) > limits.ArchiveQuoteContextChars {
			t.Errorf("%s: quote %+v", c.name, q)
		}
		if got.Citation.PartSHA256 != sha256String(text) || got.Citation.PartChars != int64(len(runes)) {
			t.Errorf("%s: part %s %d", c.name, got.Citation.PartSHA256, got.Citation.PartChars)
		}
		if _, err := a.Check(context.Background(), &got.Citation); err != nil {
			t.Errorf("%s: check: %v", c.name, err)
		}
	}
	mid := cite(t, a, v.Version, 0, int64(cases[5].start+1), 1) // inside the ZWJ sequence
	if len(mid.Notes) != 2 {
		t.Fatalf("a span inside an emoji sequence: %q", mid.Notes)
	}
}

func TestCiteBounds(t *testing.T) {
	a := newArchive(t)
	ctx := context.Background()
	long := strings.Repeat("ü", limits.ArchiveMaxCiteChars+10)
	v := addText(t, a, "c", "long", "r1", Document{Parts: []Part{{Text: long}, {Text: "second part"}}})
	full := cite(t, a, v.Version, 0, 5, limits.ArchiveMaxCiteChars)
	if utf8.RuneCountInString(full.Citation.Quote.Exact) != limits.ArchiveMaxCiteChars || full.NextStart != 5+limits.ArchiveMaxCiteChars {
		t.Fatalf("a citation of the largest length: %d characters, next %d", utf8.RuneCountInString(full.Citation.Quote.Exact), full.NextStart)
	}
	_, err := a.Cite(ctx, CiteRequest{Version: v.Version, Start: 0, Length: limits.ArchiveMaxCiteChars + 1})
	wantCode(t, err, fault.Limit)
	_, err = a.Cite(ctx, CiteRequest{Version: v.Version, Start: limits.ArchiveMaxCiteChars + 5, Length: 6})
	if fault.CodeOf(err) != fault.InvalidInput || !strings.Contains(err.Error(), "crosses the end of part 0") {
		t.Fatalf("a span across parts: %v", err)
	}
	last := cite(t, a, v.Version, 0, limits.ArchiveMaxCiteChars+5, 5)
	if last.NextStart != 0 || !strings.Contains(last.ToolText(), "part=1 is next") {
		t.Fatalf("the end of a part: %+v\n%s", last, last.ToolText())
	}
	if got := cite(t, a, v.Version, 1, 0, 6); got.Citation.Quote.Exact != "second" {
		t.Fatalf("part 1: %q", got.Citation.Quote.Exact)
	}
	for name, req := range map[string]CiteRequest{
		"no such part":    {Version: v.Version, Part: 2, Length: 1},
		"no such version": {Version: "v9", Length: 1},
	} {
		if _, err := a.Cite(ctx, req); fault.CodeOf(err) != fault.NotFound {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, req := range map[string]CiteRequest{
		"empty":          {Version: v.Version, Length: 0},
		"negative start": {Version: v.Version, Start: -1, Length: 1},
		"bad version":    {Version: "12x", Length: 1},
	} {
		if _, err := a.Cite(ctx, req); fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("%s: %v", name, err)
		}
	}
	f := must(a.AddFile(ctx, FileRequest{Collection: "c", Request: "f", Name: "x.bin", MediaType: "application/octet-stream"}, strings.NewReader("bytes")))
	_, err = a.Cite(ctx, CiteRequest{Version: f.Version, Length: 1})
	wantCode(t, err, fault.InvalidInput)
}

// TestCitedAfterNewerVersions: an original version stays citable, and
// its citations check, after the item has newer versions; a search finds
// only the current one.
func TestCitedAfterNewerVersions(t *testing.T) {
	a := newArchive(t)
	ctx := context.Background()
	v1 := addText(t, a, "papers", "p", "r1", doc("the original heliotrope wording"))
	c1 := cite(t, a, v1.Version, 0, 4, 8)
	v2 := addText(t, a, "papers", "p", "r2", doc("the revised wording"))
	again := cite(t, a, v1.Version, 0, 4, 8)
	if again.Current || again.Citation.Quote != c1.Citation.Quote || again.Citation.VersionDigest != v1.Digest {
		t.Fatalf("the first version after the second: %+v", again)
	}
	checked := must(a.Check(ctx, &c1.Citation))
	if checked.Current {
		t.Fatalf("the check says the old version is current")
	}
	if hits := must(a.Search(ctx, SearchQuery{Text: "heliotrope"})); len(hits.Hits) != 0 {
		t.Fatalf("search found the old version: %+v", hits.Hits)
	}
	hits := must(a.Search(ctx, SearchQuery{Text: "wording"}))
	if len(hits.Hits) != 1 || hits.Hits[0].Version != v2.Version {
		t.Fatalf("search of current versions: %+v", hits.Hits)
	}
}

func TestCheckRefusesWhatDoesNotHold(t *testing.T) {
	a := newArchive(t)
	ctx := context.Background()
	v := addText(t, a, "c", "i", "r1", doc("alpha beta gamma delta"))
	c := cite(t, a, v.Version, 0, 6, 4).Citation
	data, _ := json.Marshal(c)
	parsed := must(ParseCitation(data))
	if _, err := a.Check(ctx, parsed); err != nil {
		t.Fatal(err)
	}
	change := map[string]func(c *Citation){
		"exact":          func(c *Citation) { c.Quote.Exact = "bëta" },
		"prefix":         func(c *Citation) { c.Quote.Prefix = "omega " },
		"suffix":         func(c *Citation) { c.Quote.Suffix = " zeta" },
		"position":       func(c *Citation) { c.Position.Start++ },
		"part digest":    func(c *Citation) { c.PartSHA256 = strings.Repeat("1", 64) },
		"version digest": func(c *Citation) { c.VersionDigest = strings.Repeat("2", 64) },
		"archive":        func(c *Citation) { c.Archive = "another" },
		"item":           func(c *Citation) { c.Item = "j" },
	}
	for name, f := range change {
		bad := c
		f(&bad)
		if _, err := a.Check(ctx, &bad); fault.CodeOf(err) != fault.Integrity {
			t.Errorf("%s changed: %v", name, err)
		}
	}
	tamper(t, a, `UPDATE parts SET text = 'alpha bEta gamma delta'`)
	if _, err := a.Check(ctx, &c); fault.CodeOf(err) != fault.Integrity {
		t.Fatalf("the stored text changed under the citation: %v", err)
	}
	_, err := a.Cite(ctx, CiteRequest{Version: v.Version, Length: 1})
	wantCode(t, err, fault.Integrity)
	for _, bad := range []string{
		`{}`,
		`{"format": 1, "version": "v1", "position": {"start": 0, "length": 2}, "quote": {"exact": "a"}}`,
		`{"format": 2, "version": "v1", "position": {"start": 0, "length": 1}, "quote": {"exact": "a"}}`,
		`{"format": 1, "version": "v1", "position": {"start": 0, "length": 1}, "quote": {"exact": "a"}, "extra": 1}`,
	} {
		if _, err := ParseCitation([]byte(bad)); fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestSearch(t *testing.T) {
	a := newArchive(t)
	ctx := context.Background()
	addText(t, a, "reports", "q3", "r1", Document{Title: "Q3", Parts: []Part{{Text: "revenue grew in the third quarter", Page: "7", Method: "ocr"}, {Text: "costs fell"}}})
	addText(t, a, "notes", "n1", "r2", doc("revenue notes"))
	all := must(a.Search(ctx, SearchQuery{Text: "revenue", Snippets: true}))
	if len(all.Hits) != 2 {
		t.Fatalf("hits %+v", all.Hits)
	}
	in := must(a.Search(ctx, SearchQuery{Text: "revenue", Collection: "reports"}))
	if len(in.Hits) != 1 {
		t.Fatalf("one collection: %+v", in.Hits)
	}
	h := in.Hits[0]
	if h.Collection != "reports" || h.Item != "q3" || h.Version != "v1" || h.Part != 0 || h.Page != "7" || h.Method != "ocr" || h.Title != "Q3" || h.PartSHA256 != sha256String("revenue grew in the third quarter") {
		t.Fatalf("provenance %+v", h)
	}
	for _, h := range all.Hits {
		if !strings.Contains(h.Snippet, "«revenue»") {
			t.Fatalf("snippet %q", h.Snippet)
		}
	}
	page := must(a.Search(ctx, SearchQuery{Text: "revenue", Limit: 1}))
	rest := must(a.Search(ctx, SearchQuery{Text: "revenue", Limit: 1, Offset: page.NextOffset}))
	if page.NextOffset != 1 || len(rest.Hits) != 1 || rest.NextOffset != 0 || rest.Hits[0].Version == page.Hits[0].Version {
		t.Fatalf("windows %+v %+v", page, rest)
	}
	_, err := a.Search(ctx, SearchQuery{Text: "x", Limit: limits.ArchiveMaxRecords + 1})
	wantCode(t, err, fault.Limit)
	_, err = a.Search(ctx, SearchQuery{Text: `"unbalanced`, Mode: "fts"})
	wantCode(t, err, fault.InvalidInput)
	_, err = a.Search(ctx, SearchQuery{Text: "x", Offset: limits.ArchiveMaxSearchOffset + 1})
	wantCode(t, err, fault.Limit)
}

func TestSearchRecords(t *testing.T) {
	a := newArchive(t)
	ctx := context.Background()
	for i := range limits.ArchiveMaxRecords + 1 {
		addText(t, a, "c", "item"+string(rune('A'+i/26))+string(rune('a'+i%26)), "r"+string(rune('A'+i/26))+string(rune('a'+i%26)), doc("common word"))
	}
	r := must(a.Search(ctx, SearchQuery{Text: "common", Limit: limits.ArchiveMaxRecords}))
	if len(r.Hits) != limits.ArchiveMaxRecords || r.NextOffset != limits.ArchiveMaxRecords {
		t.Fatalf("%d hits, next %d", len(r.Hits), r.NextOffset)
	}
}
