package pgstore

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/internal/testkit/pgtest"
	"github.com/capkit/capkit/limits"
)

func call(id string, i int) *audit.Event {
	r := slog.NewRecord(time.Now(), slog.LevelInfo, audit.MsgCall, 0)
	outcome := "ok"
	if i%7 == 3 {
		outcome = "denied"
	}
	r.AddAttrs(slog.String("actor", "alice"), slog.String("session", id), slog.String("request", fmt.Sprint(i)),
		slog.String("tool", "read_file"), slog.String("outcome", outcome), slog.Int64("duration_us", int64(i%100)))
	return audit.Encode(r)
}

func open(t *testing.T, url, spool string, opts *Options) *Store {
	t.Helper()
	o := Options{Spool: spool}
	if opts != nil {
		o = *opts
		o.Spool = spool
	}
	s, err := Open(url, &o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func flush(t *testing.T, s *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("%v (stats %+v)", err, s.Stats())
	}
}

// stored checks the store: each (session, request) once, count of them,
// and every stream's chain whole (a Reader verifies it).
func stored(t *testing.T, url string, want int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows, distinct int
	err = conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT (event::jsonb->>'session') || '/' || (event::jsonb->>'request')) FROM capkit_audit`).Scan(&rows, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	if rows != want || distinct != want {
		t.Fatalf("%d rows, %d distinct events; want %d", rows, distinct, want)
	}
	r, err := OpenReader(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, _ := r.Chain(ctx)
		if st.Broken != "" {
			t.Fatalf("chain: %s", st.Broken)
		}
		if st.Records == uint64(want) && st.Missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("chain: %+v, want %d records", st, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestManyWritersOneStore: writers in several goroutines, each its own
// stream (as processes are), write at once; the store holds every event
// once and every stream's chain verifies.
func TestManyWritersOneStore(t *testing.T) {
	url := pgtest.URL(t)
	const writers, each = 4, 1500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := open(t, url, t.TempDir(), nil)
			for i := range each {
				s.Write(call(fmt.Sprintf("w%d", w), i))
			}
			flush(t, s)
			if st := s.Stats(); st.Lost != 0 || st.Sent != each {
				t.Errorf("writer %d: %+v", w, st)
			}
			s.Close(context.Background())
		}()
	}
	wg.Wait()
	stored(t, url, writers*each)
}

// TestStoreDownAndBack: the store stopped mid-run and started again
// loses nothing: what the queue cannot hold waits in the spool, and is
// delivered once the store answers; the spool file is gone after.
func TestStoreDownAndBack(t *testing.T) {
	srv, url := ownServer(t)
	spool := t.TempDir()
	s := open(t, url, spool, nil)
	defer s.Close(context.Background())
	for i := range 200 {
		s.Write(call("a", i))
	}
	flush(t, s)
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	const during = limits.AuditQueueEvents + 3000 // past the queue: into the spool
	for i := range during {
		s.Write(call("b", i))
	}
	st := s.Stats()
	if st.SpoolEvents == 0 || st.Lost != 0 {
		t.Fatalf("while down: %+v", st)
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		s.Write(call("c", i))
	}
	flush(t, s)
	stored(t, url, 200+during+100)
	if files, _ := filepath.Glob(filepath.Join(spool, "*")); len(files) != 0 {
		t.Errorf("spool left: %v", files)
	}
}

// TestFullSpoolIsReported: with the store down and the spool full, the
// events that fit nowhere are counted, and the count is handed to Lost
// once the store answers; the events kept are all delivered, with no gap
// in the chain.
func TestFullSpoolIsReported(t *testing.T) {
	srv, url := ownServer(t)
	var told atomic.Int64
	s := open(t, url, t.TempDir(), &Options{SpoolMaxBytes: limits.AuditMinSpoolBytes, Lost: func(n int64) { told.Add(n) }})
	defer s.Close(context.Background())
	s.Write(call("a", 0))
	flush(t, s)
	srv.Pause()
	const during = limits.AuditQueueEvents + 8000 // about 2 MiB of records: past a 1 MiB spool
	for i := range during {
		s.Write(call("b", i))
	}
	st := s.Stats()
	if st.Lost == 0 || st.SpoolBytes > limits.AuditMinSpoolBytes {
		t.Fatalf("full spool: %+v", st)
	}
	if told.Load() != 0 {
		t.Fatal("Lost was told while the store was down")
	}
	srv.Resume()
	s.Write(call("c", 0))
	flush(t, s)
	// The write after the store came back may be lost too: the queue is
	// full until the sender has emptied it.
	lost := s.Stats().Lost
	deadline := time.Now().Add(10 * time.Second)
	for told.Load() != lost && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if told.Load() != lost {
		t.Fatalf("Lost told %d, lost %d", told.Load(), lost)
	}
	stored(t, url, 1+during+1-int(lost))
}

// TestSpoolLeftBehind: a writer closed while the store is down leaves its
// spool; the next writer that reaches the store delivers it.
func TestSpoolLeftBehind(t *testing.T) {
	srv, url := ownServer(t)
	spool := t.TempDir()
	srv.Pause()
	s := open(t, url, spool, nil)
	for i := range 300 {
		s.Write(call("a", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	s.Close(ctx)
	cancel()
	files, _ := filepath.Glob(filepath.Join(spool, "*.spool*"))
	if len(files) != 1 {
		t.Fatalf("spool after close: %v", files)
	}
	b, _ := os.ReadFile(files[0])
	if n := strings.Count(string(b), "\n"); n != 301 {
		t.Fatalf("spool holds %d lines, want a header and 300 records", n)
	}
	srv.Resume()
	s2 := open(t, url, spool, nil)
	defer s2.Close(context.Background())
	s2.Write(call("b", 0))
	flush(t, s2)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if files, _ := filepath.Glob(filepath.Join(spool, "*.spool*")); len(files) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the spool left behind was not delivered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stored(t, url, 301)
}

// ownServer is a server of the test's own, which it may stop and start.
func ownServer(t *testing.T) (*pgtest.Server, string) {
	t.Helper()
	pgtest.URL(t) // skips, or fails under CI, without PostgreSQL
	srv, err := pgtest.Start("-c", "fsync=off")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	if err := srv.CreateDB("audit"); err != nil {
		t.Fatal(err)
	}
	return srv, srv.URL("audit")
}
