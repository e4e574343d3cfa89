package textarchive

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
)

func rebuild(t *testing.T, a *Archive) *Rebuilt {
	t.Helper()
	r, err := a.Rebuild(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRebuildRepairs: damage each kind of object; a rebuild repairs the
// index always, stored text where a verified copy is there (the index's,
// a retained original's), and nothing else, which the audit after it
// still names.
func TestRebuildRepairs(t *testing.T) {
	ctx := context.Background()
	s := newSite(t)
	a := newArchive(t)
	addText(t, a, "c", "doc", "r1", doc("the current text")) // v1, current
	addText(t, a, "c", "old", "r2", doc("an old text"))      // v2
	addText(t, a, "c", "old", "r3", doc("its newer text"))   // v3, current
	src := s.source(t, RetainOriginal, "")
	fetchOK(t, a, src, s.url("/page.html"), "f1") // v4
	fetchOK(t, a, src, s.url("/page.html"), "f2") // v5, current
	file := must(a.AddFile(ctx, FileRequest{Collection: "c", Request: "r4", Name: "f.bin", MediaType: "application/octet-stream"}, strings.NewReader("original bytes")))

	// The index: its text and its data.
	tamper(t, a, `UPDATE fts_content SET c0 = 'the currenT text' WHERE id = (SELECT id FROM docs WHERE ref = 'c/v1/0')`)
	if p := problems(t, a); len(p) != 1 || !p["index entry c/v1/0"].Repairable {
		t.Fatalf("before: %v", p)
	}
	if r := rebuild(t, a); !r.Audit.Clean() || r.Indexed != 3 {
		t.Fatalf("after the rebuild of the index: %+v", r)
	}
	tamper(t, a, `UPDATE fts_data SET block = zeroblob(length(block)) WHERE id > 10`)
	if r := rebuild(t, a); !r.Audit.Clean() {
		t.Fatalf("after the rebuild of damaged index data: %+v", r.Audit.Problems)
	}

	// Stored text of a current version: the index holds a verified copy.
	tamper(t, a, `UPDATE parts SET text = 'the current texT' WHERE version = 1`)
	r := rebuild(t, a)
	if !r.Audit.Clean() || len(r.Repaired) != 1 || r.Repaired[0].Object != "version v1 part 0" || !strings.Contains(r.Repaired[0].Problem, "index") {
		t.Fatalf("repairing current text: %+v", r)
	}
	if got := cite(t, a, "v1", 0, 0, 16).Citation.Quote.Exact; got != "the current text" {
		t.Fatalf("the repaired text: %q", got)
	}

	// Stored text of an older fetched version: its retained original.
	tamper(t, a, `UPDATE parts SET text = replace(text, 'heliotrope', 'heliotropE') WHERE version = 4`)
	r = rebuild(t, a)
	if !r.Audit.Clean() || len(r.Repaired) != 1 || r.Repaired[0].Object != "version v4 part 0" || !strings.Contains(r.Repaired[0].Problem, "original") {
		t.Fatalf("repairing fetched text from its original: %+v", r)
	}

	// Stored text of an older typed version: no copy; reported, never
	// substituted.
	tamper(t, a, `UPDATE parts SET text = 'an olD text' WHERE version = 2`)
	r = rebuild(t, a)
	if len(r.Repaired) != 0 || r.Audit.Clean() {
		t.Fatalf("text with no copy: %+v", r)
	}
	if p := problems(t, a)["version v2 part 0"]; p.Repairable {
		t.Fatalf("the audit says it is repairable: %+v", p)
	}
	tamper(t, a, `UPDATE parts SET text = 'an old text' WHERE version = 2`)

	// A blob: the original itself; nothing can repair it.
	flipByte(t, filepath.Join(a.dir, blobPath(file.BlobSHA256)), 0)
	r = rebuild(t, a)
	if p, ok := problems(t, a)["blob "+file.BlobSHA256]; !ok || p.Repairable || r.Audit.Clean() {
		t.Fatalf("a damaged blob after a rebuild: %+v", r.Audit.Problems)
	}
	if got, _ := os.ReadFile(filepath.Join(a.dir, blobPath(file.BlobSHA256))); string(got) == "original bytes" {
		t.Fatal("the rebuild changed the blob")
	}
	// The current text whose index copy went with a damaged stored text
	// stays out of the index.
	flipByte(t, filepath.Join(a.dir, blobPath(file.BlobSHA256)), 0)
	tamper(t, a, `UPDATE parts SET text = 'its newer texT' WHERE version = 3`,
		`UPDATE fts_content SET c0 = 'its newer texT' WHERE id = (SELECT id FROM docs WHERE ref = 'c/v3/0')`)
	r = rebuild(t, a)
	if len(r.Unindexed) != 1 || r.Unindexed[0] != "c/v3/0" || r.Audit.Clean() {
		t.Fatalf("a current part with no verified copy: %+v", r)
	}
	if hits := must(a.Search(ctx, SearchQuery{Text: "newer"})); len(hits.Hits) != 0 {
		t.Fatalf("the unverified text was indexed: %+v", hits.Hits)
	}
	_, err := a.Cite(ctx, CiteRequest{Version: "v3", Length: 3})
	wantCode(t, err, fault.Integrity)
}

// TestCleanup: what an interrupted add left (a staging directory, a
// published blob no version names, its pending record) is previewed with
// a token and removed by that token only; an altered or stale token
// removes nothing; versions, named blobs and files the archive did not
// make are never touched.
func TestCleanup(t *testing.T) {
	if testing.Short() {
		t.Skip("crash leftovers come from killed children")
	}
	ctx := context.Background()
	a := newArchive(t)
	dir := a.dir
	kept := must(a.AddFile(ctx, FileRequest{Collection: "c", Request: "kept", Name: "kept.bin", MediaType: "application/octet-stream"}, strings.NewReader("kept bytes")))
	a.Close()
	crashAt(t, "add-file", "add.published", crashEnv+"_DIR="+dir)
	foreign := filepath.Join(dir, blobsDir, "not-ours.txt")
	if err := os.WriteFile(foreign, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	a = must(Open(ctx, dir))
	defer a.Close()
	p := must(a.CleanupPreview(ctx))
	kinds := map[string]int{}
	for _, it := range p.Items {
		kinds[it.What]++
	}
	if kinds["staging"] != 1 || kinds["staged blob"] != 1 || kinds["pending record"] != 1 || len(p.Items) != 3 {
		t.Fatalf("preview %+v", p.Items)
	}
	if again := must(a.CleanupPreview(ctx)); again.Token != p.Token {
		t.Fatal("the same archive previewed twice gives two tokens")
	}
	altered := p.Token[:len(p.Token)-1] + "0"
	if altered == p.Token {
		altered = p.Token[:len(p.Token)-1] + "1"
	}
	_, err := a.CleanupApply(ctx, altered)
	wantCode(t, err, fault.Conflict)
	// Another interrupted add: the old preview is stale.
	a.Close()
	crashAt(t, "add-text", "add.inserted", crashEnv+"_DIR="+dir)
	crashAt(t, "add-file", "stage.synced", crashEnv+"_DIR="+dir)
	a = must(Open(ctx, dir))
	defer a.Close()
	_, err = a.CleanupApply(ctx, p.Token)
	wantCode(t, err, fault.Conflict)
	// (The second child's own staging directory replaced the first one's:
	// a writer sweeps stale staging where it starts.)
	now := must(a.CleanupPreview(ctx))
	kinds = map[string]int{}
	for _, it := range now.Items {
		kinds[it.What]++
	}
	if kinds["staging"] != 1 || kinds["staged blob"] != 1 || kinds["pending record"] != 1 {
		t.Fatalf("what a refused apply left: %+v", now.Items)
	}
	p = must(a.CleanupPreview(ctx))
	done := must(a.CleanupApply(ctx, p.Token))
	if len(done.Removed) != len(p.Items) {
		t.Fatalf("removed %+v, previewed %+v", done.Removed, p.Items)
	}
	if after := must(a.CleanupPreview(ctx)); len(after.Items) != 0 {
		t.Fatalf("after the cleanup: %+v", after.Items)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Fatal("the cleanup removed a file the archive did not make")
	}
	if err := a.checkBlob(ctx, kept.BlobSHA256, kept.Bytes); err != nil {
		t.Fatalf("a named blob: %v", err)
	}
	r := must(a.Audit(ctx, AuditOptions{}))
	if !r.Clean() || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "not-ours.txt") {
		t.Fatalf("audit after the cleanup: %+v", r)
	}
}
