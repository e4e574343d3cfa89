package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/capkit/capkit/internal/testkit/pgtest"
)

// BenchmarkWrite: what a call's event costs capkit with the store on,
// written in batches of 64 (about a linger's events at a call each
// 300 µs), the sender's insert included: allocs/op and B/op count the
// whole process's.
func BenchmarkWrite(b *testing.B) {
	s, err := Open(pgtest.URL(b), &Options{Spool: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	e := call("s", 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.Write(e)
		if i%64 == 63 {
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if err := s.Close(ctx); err != nil {
		b.Fatal(err)
	}
}
