package textarchive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// newArchive makes and opens an archive in a temporary directory.
func newArchive(t testing.TB) *Archive {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "archive")
	ctx := context.Background()
	if err := Init(ctx, dir); err != nil {
		t.Fatal(err)
	}
	a, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func doc(texts ...string) Document {
	d := Document{Title: "a title"}
	for i, s := range texts {
		d.Parts = append(d.Parts, Part{Text: s, Page: Page(string(rune('1' + i))), Method: "typed"})
	}
	return d
}

func addText(t testing.TB, a *Archive, collection, item, request string, d Document) *Added {
	t.Helper()
	out, err := a.AddText(context.Background(), TextRequest{Collection: collection, Item: item, Request: request, Document: d})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func wantCode(t testing.TB, err error, code fault.Code) {
	t.Helper()
	if fault.CodeOf(err) != code {
		t.Fatalf("got %v (%s), want %s", err, fault.CodeOf(err), code)
	}
}

func TestInitRefusesExisting(t *testing.T) {
	dir := t.TempDir()
	wantCode(t, Init(context.Background(), dir), fault.Conflict)
	_, err := Open(context.Background(), dir)
	wantCode(t, err, fault.NotFound)
}

func TestIdempotentRequests(t *testing.T) {
	a := newArchive(t)
	ctx := context.Background()
	first := addText(t, a, "papers", "p1", "req-1", doc("alpha beta"))
	if first.Repeated || first.Unchanged || first.Seq != 1 || first.Version != "v1" || !first.Current {
		t.Fatalf("first add: %+v", first)
	}
	again := addText(t, a, "papers", "p1", "req-1", doc("alpha beta"))
	if !again.Repeated || again.Version != first.Version || again.Digest != first.Digest {
		t.Fatalf("the same request with the same content: %+v", again)
	}
	for name, req := range map[string]TextRequest{
		"other text":       {Collection: "papers", Item: "p1", Request: "req-1", Document: doc("alpha gamma")},
		"other title":      {Collection: "papers", Item: "p1", Request: "req-1", Document: Document{Parts: doc("alpha beta").Parts, Title: "b"}},
		"other item":       {Collection: "papers", Item: "p2", Request: "req-1", Document: doc("alpha beta")},
		"other collection": {Collection: "notes", Item: "p1", Request: "req-1", Document: doc("alpha beta")},
	} {
		_, err := a.AddText(ctx, req)
		if fault.CodeOf(err) != fault.Conflict || !strings.Contains(err.Error(), "v1") {
			t.Errorf("%s under the same request: %v", name, err)
		}
	}
	_, err := a.AddFile(ctx, FileRequest{Collection: "papers", Item: "p1", Request: "req-1", Name: "p1.txt", MediaType: "text/plain"}, strings.NewReader("alpha beta"))
	wantCode(t, err, fault.Conflict)
	same := addText(t, a, "papers", "p1", "req-2", doc("alpha beta"))
	if !same.Unchanged || same.Version != "v1" {
		t.Fatalf("a new request with the current content: %+v", same)
	}
	if again := addText(t, a, "papers", "p1", "req-2", doc("alpha beta")); !again.Repeated || again.Version != "v1" {
		t.Fatalf("repeating the request that found the current version: %+v", again)
	}
	vl := must(a.Versions(ctx, VersionsQuery{Collection: "papers", Item: "p1"}))
	if vl.Total != 1 || len(vl.Versions) != 1 {
		t.Fatalf("conflicts and repeats added versions: %+v", vl)
	}
}

func TestVersionsRetained(t *testing.T) {
	a := newArchive(t)
	ctx := context.Background()
	v1 := addText(t, a, "c", "item", "r1", doc("first text"))
	v2 := addText(t, a, "c", "item", "r2", doc("second text", "and more"))
	if v2.Seq != 2 || !v2.Current || v2.Version == v1.Version {
		t.Fatalf("second version: %+v", v2)
	}
	old := must(a.Version(ctx, v1.Version))
	if old.Current || old.Seq != 1 || old.Digest != v1.Digest {
		t.Fatalf("the first version after the second: %+v", old)
	}
	vl := must(a.Versions(ctx, VersionsQuery{Collection: "c", Item: "item"}))
	if vl.Total != 2 || vl.Versions[0].Version != v1.Version || vl.Versions[1].Version != v2.Version || vl.Versions[0].Current || !vl.Versions[1].Current {
		t.Fatalf("versions: %+v", vl)
	}
	l := must(a.List(ctx, ListQuery{Collection: "c"}))
	if l.Total != 1 || l.Items[0].Versions != 2 || l.Items[0].Current.Version != v2.Version {
		t.Fatalf("list: %+v", l)
	}
	_, err := a.List(ctx, ListQuery{Collection: "nothing"})
	wantCode(t, err, fault.NotFound)
	_, err = a.Versions(ctx, VersionsQuery{Collection: "c", Item: "nothing"})
	wantCode(t, err, fault.NotFound)
	_, err = a.Version(ctx, "v99")
	wantCode(t, err, fault.NotFound)
}

func TestListWindows(t *testing.T) {
	a := newArchive(t)
	ctx := context.Background()
	for i := range limits.ArchiveMaxRecords + 5 {
		addText(t, a, "c", strings.Repeat("i", 1)+string(rune('A'+i/26))+string(rune('a'+i%26)), "r"+string(rune('A'+i/26))+string(rune('a'+i%26)), doc("text"))
	}
	l := must(a.List(ctx, ListQuery{Collection: "c", Limit: limits.ArchiveMaxRecords}))
	if len(l.Items) != limits.ArchiveMaxRecords || l.NextOffset != limits.ArchiveMaxRecords || l.Total != limits.ArchiveMaxRecords+5 {
		t.Fatalf("a full window: %d items, next %d, total %d", len(l.Items), l.NextOffset, l.Total)
	}
	rest := must(a.List(ctx, ListQuery{Collection: "c", Limit: limits.ArchiveMaxRecords, Offset: l.NextOffset}))
	if len(rest.Items) != 5 || rest.NextOffset != 0 {
		t.Fatalf("the last window: %d items, next %d", len(rest.Items), rest.NextOffset)
	}
	if d := must(a.List(ctx, ListQuery{Collection: "c"})); len(d.Items) != limits.ArchiveDefaultRecords {
		t.Fatalf("the default window holds %d items", len(d.Items))
	}
	_, err := a.List(ctx, ListQuery{Collection: "c", Limit: limits.ArchiveMaxRecords + 1})
	wantCode(t, err, fault.Limit)
	_, err = a.Versions(ctx, VersionsQuery{Collection: "c", Item: "iAa", Limit: limits.ArchiveMaxRecords + 1})
	wantCode(t, err, fault.Limit)
	_, err = a.List(ctx, ListQuery{Collection: "c", Offset: -1})
	wantCode(t, err, fault.InvalidInput)
}

func TestDocumentBounds(t *testing.T) {
	a := newArchive(t)
	ctx := context.Background()
	parts := func(n int) Document {
		d := Document{Parts: make([]Part, n)}
		for i := range d.Parts {
			d.Parts[i].Text = "p"
		}
		return d
	}
	addText(t, a, "c", "max-parts", "r1", parts(limits.ArchiveMaxParts))
	_, err := a.AddText(ctx, TextRequest{Collection: "c", Item: "too-many", Request: "r2", Document: parts(limits.ArchiveMaxParts + 1)})
	wantCode(t, err, fault.Limit)
	big := strings.Repeat("é", limits.ArchiveMaxTextBytes/2)
	full := addText(t, a, "c", "max-text", "r3", Document{Parts: []Part{{Text: big[:len(big)-2]}, {Text: "ab"}}})
	if full.Chars != int64(limits.ArchiveMaxTextBytes/2-1+2) {
		t.Fatalf("chars %d", full.Chars)
	}
	_, err = a.AddText(ctx, TextRequest{Collection: "c", Item: "too-long", Request: "r4", Document: Document{Parts: []Part{{Text: big}, {Text: "a"}}}})
	wantCode(t, err, fault.Limit)
	_, err = a.AddText(ctx, TextRequest{Collection: "c", Item: "bad", Request: "r5", Document: Document{Parts: []Part{{Text: "\xff"}}}})
	wantCode(t, err, fault.InvalidInput)
	for name, req := range map[string]TextRequest{
		"no parts":             {Collection: "c", Item: "i", Request: "r", Document: Document{}},
		"slash in collection":  {Collection: "a/b", Item: "i", Request: "r", Document: doc("x")},
		"newline in item":      {Collection: "c", Item: "i\n", Request: "r", Document: doc("x")},
		"empty request":        {Collection: "c", Item: "i", Request: "", Document: doc("x")},
		"relative source":      {Collection: "c", Item: "i", Request: "r", Document: Document{Parts: doc("x").Parts, SourceURL: "here"}},
		"control in a warning": {Collection: "c", Item: "i", Request: "r", Document: Document{Parts: []Part{{Text: "x", Warnings: []string{"a\x1b[2J"}}}}},
	} {
		if _, err := a.AddText(ctx, req); fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("%s: %v", name, err)
		}
	}
	long := strings.Repeat("n", limits.ArchiveMaxNameBytes)
	addText(t, a, long, long, long, doc("x"))
	_, err = a.AddText(ctx, TextRequest{Collection: long + "n", Item: "i", Request: "r9", Document: doc("x")})
	wantCode(t, err, fault.Limit)
	many := Document{Parts: []Part{{Text: "x", Warnings: make([]string, limits.ArchiveMaxWarnings+1)}}}
	for i := range many.Parts[0].Warnings {
		many.Parts[0].Warnings[i] = "w"
	}
	_, err = a.AddText(ctx, TextRequest{Collection: "c", Item: "w", Request: "r10", Document: many})
	wantCode(t, err, fault.Limit)
	many.Parts[0].Warnings = many.Parts[0].Warnings[:limits.ArchiveMaxWarnings]
	addText(t, a, "c", "w", "r10", many)
}

// zeros yields n zero bytes.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), z.n))
	clear(p[:k])
	z.n -= int64(k)
	return k, nil
}

func TestFileBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("writes two blobs of the largest size")
	}
	a := newArchive(t)
	ctx := context.Background()
	out, err := a.AddFile(ctx, FileRequest{Collection: "c", Request: "r1", Name: "zeros.bin", MediaType: "application/octet-stream"}, &zeros{limits.ArchiveMaxFileBytes})
	if err != nil || out.Bytes != limits.ArchiveMaxFileBytes || out.Item != "zeros.bin" {
		t.Fatalf("a file of the largest size: %+v %v", out, err)
	}
	_, err = a.AddFile(ctx, FileRequest{Collection: "c", Request: "r2", Name: "more.bin", MediaType: "application/octet-stream"}, &zeros{limits.ArchiveMaxFileBytes + 1})
	wantCode(t, err, fault.Limit)
	if names, _ := os.ReadDir(a.dir); len(names) != 4 { // archive.db, -wal, -shm, blobs
		t.Fatalf("the refused file left something behind: %v", names)
	}
}

func TestFilesStoredOnce(t *testing.T) {
	a := newArchive(t)
	ctx := context.Background()
	data := []byte("%PDF-1.7 not really\n")
	req := FileRequest{Collection: "c", Request: "r1", Name: "a.pdf", MediaType: "application/pdf"}
	first := must(a.AddFile(ctx, req, bytes.NewReader(data)))
	req.Request, req.Name = "r2", "b.pdf"
	second := must(a.AddFile(ctx, req, bytes.NewReader(data)))
	if first.BlobSHA256 != second.BlobSHA256 || first.Version == second.Version || first.Kind != KindFile {
		t.Fatalf("two names of one content: %+v %+v", first, second)
	}
	n := 0
	filepath.WalkDir(filepath.Join(a.dir, blobsDir), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	if n != 1 {
		t.Fatalf("%d blob files for one content", n)
	}
	again := must(a.AddFile(ctx, req, bytes.NewReader(data)))
	if !again.Repeated {
		t.Fatalf("the repeated request: %+v", again)
	}
	req.Request = "r3"
	_, err := a.AddFile(ctx, req, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var pending int
	a.read(ctx, "test", func(tx *txn) error { return tx.row(`SELECT count(*) FROM pending`).Scan(&pending) })
	if pending != 0 {
		t.Fatalf("%d pending records after committed adds", pending)
	}
	for _, bad := range []FileRequest{
		{Collection: "c", Request: "r4", Name: "../x", MediaType: "text/plain"},
		{Collection: "c", Request: "r4", Name: "x", MediaType: "text"},
	} {
		_, err := a.AddFile(ctx, bad, strings.NewReader("x"))
		wantCode(t, err, fault.InvalidInput)
	}
}

func TestParseDocument(t *testing.T) {
	ctx := context.Background()
	d, err := ParseDocument(ctx, []byte(`{"parts": [{"text": "a", "page": 3, "method": "ocr", "warnings": ["faint"]}, {"text": "b", "page": "iv"}], "title": "T", "source_url": "https://example.org/x"}`))
	if err != nil || d.Parts[0].Page != "3" || d.Parts[1].Page != "iv" || d.Title != "T" {
		t.Fatalf("%+v %v", d, err)
	}
	for _, bad := range []string{
		`{"parts": [{"text": "a", "extra": 1}]}`,
		`{"parts": [{"text": "a"}], "parts": []}`,
		`{"parts": [{"text": "a", "page": -1}]}`,
		`{"parts": [{"text": "a", "page": 1.5}]}`,
		`{"parts": [{"text": 7}]}`,
		`{"parts": [{"text": "a"}]} {}`,
		`{"parts": [{"text": "\ud800"}]}`,
		`{"parts": []}`,
	} {
		_, err := ParseDocument(ctx, []byte(bad))
		if fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("%s: %v", bad, err)
		}
	}
	_, err = ParseDocument(ctx, bytes.Repeat([]byte(" "), limits.ArchiveMaxDocumentJSONBytes+1))
	wantCode(t, err, fault.Limit)
}

func TestOpenRefusesSymlinkedDatabase(t *testing.T) {
	a := newArchive(t)
	dir := a.dir
	a.Close()
	db := filepath.Join(dir, dbName)
	if err := os.Rename(db, db+".real"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(db+".real", db); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), dir)
	if err == nil || !errors.Is(err, fault.ErrDenied) && fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("a symlinked database: %v", err)
	}
}
