package trail

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

// carol is an actor whose name canonical JSON escapes.
const carol = `carol "q" \ é`

// callEvent is call i of three actors and four tools, with denials,
// limits and failures among them, 3 s apart.
func callEvent(i int) *audit.Event {
	return audit.Encode(testkit.CallRecord(i, 3*time.Second, [3]string{"alice", "bob", carol}))
}

// both writes n calls to a trail file and to an in-memory source.
func both(t *testing.T, path string, n int, opts *Options) (*Reader, *audit.Recent) {
	t.Helper()
	w, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	mem := audit.NewRecent(n)
	for i := range n {
		e := callEvent(i)
		w.Write(e)
		mem.Sink().Write(e)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader(context.Background(), []string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, mem
}

// indexed waits until the reader's index has read n records.
func indexed(t *testing.T, r *Reader, n uint64) *audit.ChainState {
	t.Helper()
	deadline := time.After(60 * time.Second) // a guard against a hang, not a measure
	for {
		ch := r.Changed()
		st, _ := r.Chain(context.Background())
		if st.Total >= n {
			return st
		}
		select {
		case <-ch:
		case <-time.After(limits.AuditPollInterval):
		case <-deadline:
			t.Fatalf("the index read %d of %d records", st.Total, n)
		}
	}
}

func requests(evs []*audit.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Request
	}
	return out
}

// all pages through src newest first.
func all(t *testing.T, src audit.Source, f audit.Filter, limit int) []string {
	t.Helper()
	var out []string
	cursor := ""
	for {
		p, err := src.Events(context.Background(), f, cursor, limit)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, requests(p.Events)...)
		if p.Next == "" {
			return out
		}
		cursor = p.Next
	}
}

// TestReaderAnswersAsMemoryDoes: over the same events the file's reader
// gives the windows, the events after a position, the counts and the
// names an in-memory source gives, under each filter.
func TestReaderAnswersAsMemoryDoes(t *testing.T) {
	const n = 500
	r, mem := both(t, filepath.Join(t.TempDir(), "audit.jsonl"), n, nil)
	st := indexed(t, r, n)
	if st.Records != n || st.Broken != "" || st.Streams != 1 || len(st.Head) != 64 {
		t.Errorf("chain %+v", st)
	}
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, f := range []audit.Filter{{}, {Actor: "bob"}, {Tool: "grep"}, {Outcome: "denied"}, {Outcome: audit.OutcomeError},
		{Actor: carol, Tool: "glob", Outcome: "limit"}, {Actor: carol}, {Actor: "bo"}, {Tool: "edit_file", Outcome: "ok"},
		{From: t0.Add(time.Hour), To: t0.Add(2 * time.Hour)}, {Actor: "nobody"}} {
		for _, limit := range []int{1, 7, n + 1} {
			got, want := all(t, r, f, limit), all(t, mem, f, limit)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%+v limit %d: %d events, want %d", f, limit, len(got), len(want))
			}
		}
		gs, err := r.Stats(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		ms, _ := mem.Stats(ctx, f)
		if !reflect.DeepEqual(gs, ms) {
			t.Errorf("%+v: stats\n%+v\nwant\n%+v", f, gs, ms)
		}
		evs, pos, err := r.After(ctx, f, "", n)
		if err != nil {
			t.Fatal(err)
		}
		mevs, _, _ := mem.After(ctx, f, "", n)
		if !reflect.DeepEqual(requests(evs), requests(mevs)) {
			t.Errorf("%+v: After gives %d events, want %d", f, len(evs), len(mevs))
		}
		if end, _ := r.Position(ctx); pos != end {
			t.Errorf("After ends at %s, the position is %s", pos, end)
		}
	}
	ga, gt, _ := r.Names(ctx)
	ma, mt, _ := mem.Names(ctx)
	if !reflect.DeepEqual(ga, ma) || !reflect.DeepEqual(gt, mt) {
		t.Errorf("names %v %v, want %v %v", ga, gt, ma, mt)
	}
	for _, bad := range []string{"x", "1:0", "0:-1", "-1:0", "0:x"} {
		if _, err := r.Events(ctx, audit.Filter{}, bad, 1); fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("cursor %q: %v", bad, err)
		}
		if _, _, err := r.After(ctx, audit.Filter{}, bad, 1); fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("After cursor %q: %v", bad, err)
		}
	}
}

// TestNewestWindowReadsOnlyItsEnd: the newest window of a large trail
// reads one chunk from its end, not the file; a read bound stops a scan
// with the offset to go on from, and going on from it misses nothing.
func TestNewestWindowReadsOnlyItsEnd(t *testing.T) {
	const n = 20_000
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	r, _ := both(t, path, n, nil)
	rf := r.snapshot()[0]
	end, err := completeEnd(rf)
	if err != nil || end < 4*limits.MiB {
		t.Fatalf("the trail is %d bytes (%v): want more than 4 MiB", end, err)
	}
	var got []int64
	_, read, err := backward(context.Background(), rf, end, limits.TrailReadBytes, func(at int64, _ []byte) bool {
		got = append(got, at)
		return len(got) < 100
	})
	if err != nil || len(got) != 100 || read > 256*limits.KiB {
		t.Errorf("100 newest lines: %d lines, %d bytes read of %d (%v)", len(got), read, end, err)
	}
	p, err := r.Events(context.Background(), audit.Filter{}, "", 100)
	if err != nil || len(p.Events) != 100 || p.Events[0].Request != fmt.Sprint(n-1) {
		t.Fatalf("newest window: %v", err)
	}
	// A bound of 1 MiB: the scan stops with where it got, and from there
	// the next scan goes on to the file's start.
	count := 0
	stopped, read, err := backward(context.Background(), rf, end, limits.MiB, func(int64, []byte) bool { count++; return true })
	if err != nil || stopped < 0 || read < limits.MiB || read > limits.MiB+256*limits.KiB {
		t.Fatalf("bounded scan: stopped at %d after %d bytes (%v)", stopped, read, err)
	}
	rest, _, err := backward(context.Background(), rf, stopped, limits.TrailReadBytes, func(int64, []byte) bool { count++; return true })
	if err != nil || rest != -1 || count != n {
		t.Errorf("the two scans saw %d lines of %d (%v)", count, n, err)
	}
	count = 0
	at, err := forward(context.Background(), rf, 0, limits.MiB, func(int64, []byte) bool { count++; return true })
	if err != nil || at < limits.MiB || at > limits.MiB+int64(64*limits.KiB) {
		t.Fatalf("bounded forward read: at %d (%v)", at, err)
	}
	if _, err := forward(context.Background(), rf, at, limits.TrailReadBytes, func(int64, []byte) bool { count++; return true }); err != nil || count != n {
		t.Errorf("the two forward reads saw %d lines of %d (%v)", count, n, err)
	}
}

// TestReaderFollowsRotation: a reader opened on a trail sees what a
// writer appends after it, across the writer's rotations, in order, and
// the chain holds through them.
func TestReaderFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	w, err := Open(path, &Options{MaxBytes: limits.AuditMinFileBytes})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(callEvent(0))
	r, err := OpenReader(context.Background(), []string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	const n = 4000 // about 1.3 MiB: a rotation
	for i := 1; i < n; i++ {
		w.Write(callEvent(i))
		if i%1000 == 0 {
			indexed(t, r, uint64(i)) // the reader follows while it is written
		}
	}
	w.Close(ctx)
	rotated, _ := filepath.Glob(path + ".*")
	if len(rotated) < 1 {
		t.Fatalf("the writer rotated %d times", len(rotated))
	}
	st := indexed(t, r, n)
	if st.Records != n || st.Broken != "" {
		t.Errorf("chain across rotations: %+v", st)
	}
	var got []string
	pos := ""
	for {
		evs, next, err := r.After(ctx, audit.Filter{}, pos, 500)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, requests(evs)...)
		if next == pos {
			break
		}
		pos = next
	}
	if len(got) != n || got[0] != "0" || got[n-1] != fmt.Sprint(n-1) {
		t.Fatalf("After across rotations: %d events", len(got))
	}
	if newest := all(t, r, audit.Filter{}, 1000); len(newest) != n || newest[0] != fmt.Sprint(n-1) {
		t.Errorf("windows across rotations: %d events", len(newest))
	}
}

// TestReaderNamesABrokenChain: a line changed in the trail is named by
// Chain, and left out of the windows.
func TestReaderNamesABrokenChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		w.Write(callEvent(i))
	}
	w.Close(context.Background())
	ls := lines(t, path)
	ls[20] = strings.Replace(ls[20], `"actor":"`, `"actor":"x`, 1)
	writeLines(t, path, ls)
	r, err := OpenReader(context.Background(), []string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st := indexed(t, r, 50)
	if !strings.Contains(st.Broken, "record 21") || st.Records != 20 {
		t.Errorf("chain %+v", st)
	}
	if got := all(t, r, audit.Filter{}, 100); len(got) != 49 {
		t.Errorf("%d events shown, want the 49 that are records", len(got))
	}
	if _, err := OpenReader(context.Background(), []string{filepath.Join(t.TempDir(), "missing")}, nil); fault.CodeOf(err) != fault.NotFound {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := OpenReader(context.Background(), nil, nil); fault.CodeOf(err) != fault.InvalidInput {
		t.Errorf("no file: %v", err)
	}
	os.Remove(path)
}

// TestChainPartialUntilIndexed: the chain state says the counts are
// partial, with the bytes read of the files', until the index has read
// every record; then it says nothing of it.
func TestChainPartialUntilIndexed(t *testing.T) {
	const n = 3_000
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	r, _ := both(t, path, n, nil)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(60 * time.Second) // a guard against a hang, not a measure
	for {
		ch := r.Changed()
		st, _ := r.Chain(context.Background())
		if !st.Partial {
			if st.Total != n || st.ReadBytes != 0 || st.SizeBytes != 0 {
				t.Fatalf("not partial with %d of %d records read, %d of %d bytes", st.Total, n, st.ReadBytes, st.SizeBytes)
			}
			return
		}
		if st.SizeBytes != info.Size() || st.ReadBytes > st.SizeBytes || st.Total == n && st.ReadBytes == 0 {
			t.Fatalf("partial: %d of %d bytes read (the file has %d), %d records", st.ReadBytes, st.SizeBytes, info.Size(), st.Total)
		}
		select {
		case <-ch:
		case <-time.After(limits.AuditPollInterval):
		case <-deadline:
			t.Fatalf("still partial: %+v", st)
		}
	}
}
