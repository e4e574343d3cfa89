package trail

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/store/journal"
)

// BenchmarkNewestWindow: the newest 100 events of a trail of
// CAPKIT_TRAIL_EVENTS events (default 100,000), and the time its index
// takes to read them all, reported as index-s.
func BenchmarkNewestWindow(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("CAPKIT_TRAIL_EVENTS")); err == nil && v > 0 {
		n = v
	}
	path := filepath.Join(b.TempDir(), "audit.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	prev := journal.Genesis
	buf := make([]byte, 0, 1<<20)
	for i := range n {
		line, hash := journal.EncodeRecord(uint64(i+1), prev, callEvent(i).JSON)
		buf, prev = append(buf, line...), hash
		if len(buf) > 1<<20-4096 || i == n-1 {
			f.Write(buf)
			buf = buf[:0]
		}
	}
	f.Close()
	start := time.Now()
	r, err := OpenReader(context.Background(), []string{path}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ResetTimer()
	for b.Loop() {
		p, err := r.Events(context.Background(), audit.Filter{}, "", 100)
		if err != nil || len(p.Events) != 100 {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for {
		ch := r.Changed()
		if st, _ := r.Chain(context.Background()); st.Total == uint64(n) {
			break
		}
		<-ch
	}
	b.ReportMetric(time.Since(start).Seconds(), "index-s")
	t0 := time.Now()
	if _, err := r.Stats(context.Background(), audit.Filter{}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(t0).Seconds(), "stats-s")
}
