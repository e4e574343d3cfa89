package trail

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/store/journal"
)

// FuzzReaderLines: over any file content the reader's windows and the
// events after a position hold only records of the file, once each, the
// same events both ways, and fail only with a typed fault.
func FuzzReaderLines(f *testing.F) {
	l1, h1 := journal.EncodeRecord(1, journal.Genesis, callEvent(1).JSON)
	l2, _ := journal.EncodeRecord(2, h1, callEvent(2).JSON)
	f.Add(append(append([]byte{}, l1...), l2...))
	f.Add(append(append([]byte("junk\n\n"), l1...), []byte("{\"seq\":2")...))
	f.Add([]byte("\n\n\n"))
	f.Add(l1[:len(l1)-1])
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := OpenReader(context.Background(), []string{path}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		ctx := context.Background()
		var back []string
		cursor := ""
		for range 1000 {
			p, err := r.Events(ctx, audit.Filter{}, cursor, 3)
			if err != nil {
				if fault.CodeOf(err) == fault.Internal {
					t.Fatalf("Events: %v", err)
				}
				return
			}
			back = append(back, requests(p.Events)...)
			if p.Next == "" {
				break
			}
			cursor = p.Next
		}
		fwd, _, err := r.After(ctx, audit.Filter{}, "", 1000)
		if err != nil {
			t.Fatalf("After: %v", err)
		}
		if len(fwd) != len(back) {
			t.Fatalf("%d events forward, %d backward", len(fwd), len(back))
		}
		for i, e := range fwd {
			if back[len(back)-1-i] != e.Request {
				t.Fatalf("event %d: %s forward, %s backward", i, e.Request, back[len(back)-1-i])
			}
		}
	})
}
