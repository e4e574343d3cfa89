package sniff

import (
	"context"
	"errors"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
)

var formats = []Format{JSON, Feed, HTML, PDF, CSV}

// FuzzCheck checks that any body and media type give a report or a typed
// failure (a rejection carries the detected kind), never a panic or hang.
func FuzzCheck(f *testing.F) {
	for _, dir := range []string{"testdata", "../htmldoc/testdata", "../feed/testdata"} {
		for i, data := range testkit.Fixtures(f, dir+"/*") {
			f.Add(data, uint8(i), "text/html; charset=utf-8")
		}
	}
	f.Add([]byte("\x1f\x8b\x08\x00"), uint8(4), "text/csv")
	f.Add([]byte(" \"x\""), uint8(0), "application/json")
	f.Fuzz(func(t *testing.T, data []byte, which uint8, mediaType string) {
		expect := formats[int(which)%len(formats)]
		r, err := Check(context.Background(), data, expect, mediaType)
		if err != nil {
			var fe *fault.Error
			if !errors.As(err, &fe) || !fe.Code.Valid() || fe.Code == fault.Internal {
				t.Fatalf("untyped or internal failure: %v", err)
			}
			var re *RejectError
			if errors.As(err, &re) && (re.Detected == "" || fe.Code != fault.Integrity) {
				t.Fatalf("rejection without a kind: %v", err)
			}
			return
		}
		if r.Detected == KindEmpty || r.Expected != expect {
			t.Fatalf("report %+v", r)
		}
	})
}
