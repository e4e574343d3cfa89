package textarchive

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tamper runs SQL on the archive's database behind its back, as a
// damaged disk or another program would change it.
func tamper(t testing.TB, a *Archive, queries ...string) {
	t.Helper()
	err := a.write(context.Background(), "tampering", func(tx *txn) error {
		for _, q := range queries {
			if err := tx.exec(q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	clear(a.stmts) // statements may name tables the queries changed
}

// flipByte flips one bit of the byte at off of the file at path.
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x20
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// problems audits a and returns its problems' objects.
func problems(t *testing.T, a *Archive) map[string]Problem {
	t.Helper()
	r := must(a.Audit(context.Background(), AuditOptions{}))
	out := map[string]Problem{}
	for _, p := range r.Problems {
		out[p.Object] = p
	}
	return out
}

func TestAuditFindsDamage(t *testing.T) {
	ctx := context.Background()
	a := newArchive(t)
	addText(t, a, "c", "doc", "r1", doc("stored text of the first part", "second part"))
	file := must(a.AddFile(ctx, FileRequest{Collection: "c", Request: "r2", Name: "f.txt", MediaType: "text/plain"}, strings.NewReader("the file's bytes")))
	if p := problems(t, a); len(p) != 0 {
		t.Fatalf("a fresh archive: %v", p)
	}

	flipByte(t, filepath.Join(a.dir, blobPath(file.BlobSHA256)), 3)
	p := problems(t, a)
	if got, ok := p["blob "+file.BlobSHA256]; !ok || got.Repairable || len(p) != 1 {
		t.Fatalf("a flipped byte in a blob: %v", p)
	}
	flipByte(t, filepath.Join(a.dir, blobPath(file.BlobSHA256)), 3)

	tamper(t, a, `UPDATE parts SET text = 'stored text of thE first part' WHERE version = 1 AND idx = 0`)
	p = problems(t, a)
	if got, ok := p["version v1 part 0"]; !ok || !got.Repairable || len(p) != 1 {
		t.Fatalf("a changed byte in stored text (the index holds a verified copy): %v", p)
	}
	tamper(t, a, `UPDATE parts SET text = 'stored text of the first part' WHERE version = 1 AND idx = 0`)

	tamper(t, a, `UPDATE fts_content SET c0 = 'second parT' WHERE id = (SELECT id FROM docs WHERE ref = 'c/v1/1')`)
	p = problems(t, a)
	if got, ok := p["index entry c/v1/1"]; !ok || !got.Repairable {
		t.Fatalf("a changed byte in the index's text: %v", p)
	}
	tamper(t, a, `UPDATE fts_data SET block = zeroblob(length(block)) WHERE id > 10`)
	p = problems(t, a)
	if got, ok := p["index"]; !ok || !got.Repairable {
		t.Fatalf("damaged index data: %v", p)
	}

	tamper(t, a, `UPDATE versions SET title = 'another title' WHERE id = 1`)
	p = problems(t, a)
	if _, ok := p["version v1"]; !ok {
		t.Fatalf("a changed title: %v", p)
	}
	if _, ok := p["chain at v1"]; ok {
		t.Fatalf("the title is covered by the digest, not by the chain record: %v", p)
	}
	tamper(t, a, `UPDATE versions SET digest = '`+strings.Repeat("0", 64)+`' WHERE id = 1`)
	if _, ok := problems(t, a)["chain at v1"]; !ok {
		t.Fatalf("a changed digest breaks the chain")
	}
	tamper(t, a, `DELETE FROM requests WHERE version = 2`, `DELETE FROM parts WHERE version = 2`, `DELETE FROM versions WHERE id = 2`, `DELETE FROM items WHERE current = 2`)
	if _, ok := problems(t, a)["chain"]; !ok {
		t.Fatalf("the last version removed: the head names it")
	}
}
