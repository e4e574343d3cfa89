package feed

import (
	"context"
	"errors"
	"io"
	"testing"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

// FuzzParse checks that any input either parses within the limits, with
// consistent counts and absolute links, or fails with a typed fault; never
// a panic or hang. Seeds: the fixtures in testdata.
func FuzzParse(f *testing.F) {
	for _, data := range testkit.Fixtures(f, "testdata/*") {
		f.Add(data, uint16(3))
	}
	f.Add([]byte(`<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>a</id></entry><entry><id>a</id><title>b</title></entry></feed>`), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		n := int(limit)%limits.FeedMaxEntries + 1
		fd, err := Parse(context.Background(), data, "https://example.org/feed/", n)
		if err != nil {
			var fe *fault.Error
			if !errors.As(err, &fe) || !fe.Code.Valid() || fe.Code == fault.Internal {
				t.Fatalf("untyped or internal failure: %v", err)
			}
			return
		}
		if fd.Nodes > limits.FeedMaxNodes || fd.Depth > limits.FeedMaxDepth || len(fd.Entries) > n ||
			len(fd.Entries)+fd.OmittedEntries != fd.TotalEntries {
			t.Fatalf("bounds or counts: %d nodes, depth %d, %d+%d/%d entries", fd.Nodes, fd.Depth, len(fd.Entries), fd.OmittedEntries, fd.TotalEntries)
		}
		for i, e := range fd.Entries {
			if e.Index != i || !utf8.ValidString(e.Title) || !utf8.ValidString(e.Summary) {
				t.Fatalf("entry %d: %+v", i, e)
			}
			for _, d := range []*Date{e.Published, e.Updated} {
				if d != nil && (d.Problem == "") != (d.UTC != nil) {
					t.Fatalf("date %+v", d)
				}
			}
		}
		for _, d := range fd.Duplicates {
			if len(d.Entries) < 2 || d.Conflict != (len(d.Fields) > 0) {
				t.Fatalf("duplicate %+v", d)
			}
		}
		if err := fd.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}
