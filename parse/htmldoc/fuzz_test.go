package htmldoc

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

// FuzzParse checks that any input either parses within the limits into
// valid UTF-8 blocks, or fails with a typed fault; never a panic or hang.
// Seeds: the fixtures in testdata and the corpus in testdata/fuzz.
func FuzzParse(f *testing.F) {
	for _, data := range testkit.Fixtures(f, "testdata/*.html") {
		f.Add(data, true)
	}
	f.Add([]byte("<table><tr><td><table><tr><td>x</table></table>"), false)
	f.Add([]byte("<svg><title>t</title><p/></svg><math><mi/></math>"), false)
	f.Add([]byte("<a href=x><a href=y>z</a></a><li><li><dd><dt>"), true)
	f.Fuzz(func(t *testing.T, data []byte, article bool) {
		sel := SelectText
		if article {
			sel = SelectArticle
		}
		doc, err := Parse(context.Background(), data, sel, &Options{BaseURL: "https://example.org/a/b"})
		if err != nil {
			var fe *fault.Error
			if !errors.As(err, &fe) || !fe.Code.Valid() || fe.Code == fault.Internal {
				t.Fatalf("untyped or internal failure: %v", err)
			}
			if doc != nil {
				t.Fatal("a failure returned a document")
			}
			return
		}
		if doc.Nodes > limits.HTMLMaxNodes || doc.Depth > limits.HTMLMaxDepth {
			t.Fatalf("limits passed: %d nodes, depth %d", doc.Nodes, doc.Depth)
		}
		if article && doc.Article == nil {
			t.Fatal("article selection without article info")
		}
		for _, b := range doc.Blocks {
			if b.Text == "" || !utf8.ValidString(b.Text) {
				t.Fatalf("bad block %q", b.Text)
			}
			if b.Kind != Pre && strings.TrimSpace(b.Text) != b.Text {
				t.Fatalf("untrimmed block %q", b.Text)
			}
		}
		for _, l := range doc.Links {
			if !utf8.ValidString(l.URL) || !utf8.ValidString(l.Text) {
				t.Fatalf("bad link %q", l)
			}
		}
		if err := doc.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}
