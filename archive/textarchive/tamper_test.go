package textarchive

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/search/lexindex"
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

// index writes mutations into the archive's index behind its back.
func index(t *testing.T, a *Archive, batch ...lexindex.Mutation) {
	t.Helper()
	err := a.write(context.Background(), "tampering", func(tx *txn) error {
		_, err := a.ix.Apply(tx.ctx, batch)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAuditFindsDamageAcrossBatches damages versions on both sides of the
// audit's batch of versions, each damage found and named: the checks the
// audit makes in one scan of a batch's parts and one of their index
// entries, and the index's entries of no current part.
func TestAuditFindsDamageAcrossBatches(t *testing.T) {
	ctx := context.Background()
	a := newArchive(t)
	for i := range 270 {
		addText(t, a, "c", fmt.Sprint("d", i), fmt.Sprint("r", i), doc(fmt.Sprint("text ", i), fmt.Sprint("second ", i)))
	}
	addText(t, a, "c", "d0", "again", doc("a newer text of d0")) // v271; v1 is no longer current
	if p := problems(t, a); len(p) != 0 {
		t.Fatalf("a fresh archive: %v", p)
	}
	cases := []struct {
		name, object, problem string
		damage, repair        func()
	}{
		{"an index entry missing", "index entry c/v265/1", "is not in the index",
			func() { index(t, a, lexindex.Mutation{Ref: "c/v265/1", Remove: true}) },
			func() { index(t, a, lexindex.Mutation{Ref: "c/v265/1", Text: "second 264"}) }},
		{"an index entry of no part", "index entry c/v265/2", "no current version",
			func() { index(t, a, lexindex.Mutation{Ref: "c/v265/2", Text: "extra"}) },
			func() { index(t, a, lexindex.Mutation{Ref: "c/v265/2", Remove: true}) }},
		{"an index entry of an older version", "index entry c/v1/0", "no current version",
			func() { index(t, a, lexindex.Mutation{Ref: "c/v1/0", Text: "text 0"}) },
			func() { index(t, a, lexindex.Mutation{Ref: "c/v1/0", Remove: true}) }},
		{"a part's number changed", "version v266 part 2", "missing before it",
			func() { tamper(t, a, `UPDATE parts SET idx = 2 WHERE version = 266 AND idx = 1`) },
			func() { tamper(t, a, `UPDATE parts SET idx = 1 WHERE version = 266 AND idx = 2`) }},
		{"a part's warnings", "version v3 part 1", "do not decode",
			func() { tamper(t, a, `UPDATE parts SET warnings = 'x' WHERE version = 3 AND idx = 1`) },
			func() { tamper(t, a, `UPDATE parts SET warnings = '[]' WHERE version = 3 AND idx = 1`) }},
		{"a part's text in the second batch", "version v267 part 0", "does not match its SHA-256",
			func() { tamper(t, a, `UPDATE parts SET text = 'text 2666' WHERE version = 267 AND idx = 0`) },
			func() { tamper(t, a, `UPDATE parts SET text = 'text 266' WHERE version = 267 AND idx = 0`) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.damage()
			p := problems(t, a)
			if got, ok := p[c.object]; !ok || !strings.Contains(got.Problem, c.problem) {
				t.Fatalf("want %s: %s; got %v", c.object, c.problem, p)
			}
			_, err := a.Backup(ctx, filepath.Join(t.TempDir(), "backup.tar"), nil)
			if fault.CodeOf(err) != fault.Integrity {
				t.Fatalf("a backup of the damaged archive: %v", err)
			}
			c.repair()
			if p := problems(t, a); len(p) != 0 {
				t.Fatalf("repaired: %v", p)
			}
		})
	}
}
