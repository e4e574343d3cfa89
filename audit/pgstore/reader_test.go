package pgstore

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/internal/testkit/pgtest"
)

// mixed are calls of several actors, tools and outcomes over an hour.
func mixed(n int) []*audit.Event {
	out := make([]*audit.Event, 0, n)
	for i := range n {
		out = append(out, audit.Encode(testkit.CallRecord(i, 7*time.Second, [3]string{"alice", "bob", "carol"})))
	}
	return out
}

func reader(t *testing.T, url string) *Reader {
	t.Helper()
	r, err := OpenReader(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestReaderAnswersAsTheFileDoes: the store's counts, percentiles and
// time series are those an in-memory reader computes over the same
// events, under each filter; windows page through every event newest
// first, and After follows them oldest first.
func TestReaderAnswersAsTheFileDoes(t *testing.T) {
	url := pgtest.URL(t)
	evs := mixed(700)
	s := open(t, url, t.TempDir(), nil)
	for _, e := range evs {
		s.Write(e)
	}
	flush(t, s)
	s.Close(context.Background())
	r := reader(t, url)
	ctx := context.Background()
	for _, f := range []audit.Filter{{}, {Actor: "bob"}, {Tool: "grep", Outcome: audit.OutcomeError}, {Outcome: "denied"},
		{From: evs[100].Time, To: evs[400].Time}} {
		var acc audit.Accumulator
		want := 0
		for _, e := range evs {
			if f.Matches(e) {
				acc.Add(e)
				want++
			}
		}
		exp := acc.Stats(60)
		got, err := r.Stats(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Tools, exp.Tools) || !reflect.DeepEqual(got.Actors, exp.Actors) || !reflect.DeepEqual(got.Policies, exp.Policies) ||
			got.Calls != exp.Calls || got.Errors != exp.Errors || got.Denials != exp.Denials || got.Limits != exp.Limits {
			t.Errorf("filter %+v:\nstore %+v\nwant  %+v", f, got, exp)
		}
		if got.BucketSeconds != exp.BucketSeconds || !reflect.DeepEqual(got.Buckets, exp.Buckets) {
			t.Errorf("filter %+v: buckets of %ds %v, want %ds %v", f, got.BucketSeconds, got.Buckets, exp.BucketSeconds, exp.Buckets)
		}
		var paged []*audit.Event
		cursor := ""
		for {
			p, err := r.Events(ctx, f, cursor, 64)
			if err != nil {
				t.Fatal(err)
			}
			paged = append(paged, p.Events...)
			if p.Next == "" {
				break
			}
			cursor = p.Next
		}
		if len(paged) != want {
			t.Fatalf("filter %+v: %d events paged, want %d", f, len(paged), want)
		}
		for i := 1; i < len(paged); i++ {
			if !paged[i].Time.Before(paged[i-1].Time) {
				t.Fatalf("filter %+v: not newest first at %d", f, i)
			}
		}
		var followed []*audit.Event
		pos := ""
		for range 100 {
			evs, next, err := r.After(ctx, f, pos, 50)
			if err != nil {
				t.Fatal(err)
			}
			followed = append(followed, evs...)
			if next == pos {
				break
			}
			pos = next
		}
		if len(followed) != want {
			t.Fatalf("filter %+v: After gave %d, want %d", f, len(followed), want)
		}
	}
	actors, tools, err := r.Names(ctx)
	if err != nil || !reflect.DeepEqual(actors, []string{"alice", "bob", "carol"}) || len(tools) != 4 {
		t.Errorf("names: %v %v %v", actors, tools, err)
	}
}

// TestReaderFindsTampering: the verifier reads every stream's chain; a
// row edited in the store is named.
func TestReaderFindsTampering(t *testing.T) {
	url := pgtest.URL(t)
	s := open(t, url, t.TempDir(), nil)
	for _, e := range mixed(50) {
		s.Write(e)
	}
	flush(t, s)
	s.Close(context.Background())
	stored := func() *audit.ChainState {
		r := reader(t, url)
		deadline := time.Now().Add(10 * time.Second)
		for {
			st, _ := r.Chain(context.Background())
			if st.Total == 50 || time.Now().After(deadline) {
				return st
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if st := stored(); st.Broken != "" || st.Records != 50 || st.Streams != 1 {
		t.Fatalf("sound store: %+v", st)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE capkit_audit SET event = replace(event, '"bob"', '"mallory"') WHERE seq = 20`); err != nil {
		t.Fatal(err)
	}
	st := stored()
	if st.Broken == "" || st.Records != 19 {
		t.Fatalf("edited row: %+v", st)
	}
	t.Log(st.Broken)
}
