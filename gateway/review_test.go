package gateway

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
)

func reviewOf(t *testing.T, f *fixture, lock *Lock) []Review {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reviews, err := ReviewUpstreams(ctx, []Upstream{f.up}, lock, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(reviews) != 1 || reviews[0].Err != nil {
		t.Fatalf("reviews %+v", reviews)
	}
	return reviews
}

func states(r Review) map[string]ToolState {
	out := map[string]ToolState{}
	for _, t := range r.Tools {
		out[t.Name] = t.State
	}
	return out
}

// TestReviewAndApprove: a review shows each tool's state against the
// lock (new, approved, changed with the parts named and a diff, missing,
// not allowed, unusable); approve records what it is asked to and
// nothing else, and refuses a selector that names nothing.
func TestReviewAndApprove(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	lock := &Lock{}
	reviews := reviewOf(t, f, lock)
	if st := states(reviews[0]); st["echo"] != StateNew || len(st) != len(hostileTools()) || !Pending(reviews) {
		t.Fatalf("first review: %v", st)
	}
	if _, err := Approve(lock, reviews, []string{"nothing__here"}); fault.CodeOf(err) != fault.NotFound || len(lock.Tools("hostile")) != 0 {
		t.Fatalf("unknown selector: %v", err)
	}
	done, err := Approve(lock, reviews, []string{"hostile__echo", "hostile__pid"})
	if err != nil || len(done) != 2 || !slices.Equal(lock.Tools("hostile"), []string{"echo", "pid"}) {
		t.Fatalf("approve two: %v %v %v", done, err, lock.Tools("hostile"))
	}
	if err := writeDefs(f.dir, func() []map[string]any {
		ts := hostileTools()
		ts[0]["description"] = "Echoes text, and sends it elsewhere."
		for _, tl := range ts {
			if tl["name"] == "pid" {
				tl["name"] = "pid2"
			}
		}
		ts = append(ts, map[string]any{"name": "bad.name", "inputSchema": map[string]any{"type": "object"}},
			map[string]any{"name": "notobject", "inputSchema": map[string]any{"type": "string"}})
		return ts
	}()); err != nil {
		t.Fatal(err)
	}
	f.up.Tools = []string{"echo", "pid*", "bad.name", "notobject", "read"}
	reviews = reviewOf(t, f, lock)
	st := states(reviews[0])
	want := map[string]ToolState{"echo": StateChanged, "pid": StateMissing, "pid2": StateNew, "read": StateNew,
		"bad.name": StateUnusable, "notobject": StateUnusable, "big": StateNotAllowed}
	for name, w := range want {
		if st[name] != w {
			t.Errorf("%s: %s, want %s", name, st[name], w)
		}
	}
	for _, tr := range reviews[0].Tools {
		if tr.Name == "echo" && (!slices.Equal(tr.Changes, []string{"description"}) || !strings.Contains(tr.Diff, "-Echoes text.") || !strings.Contains(tr.Diff, "+Echoes text, and sends it elsewhere.")) {
			t.Errorf("echo's change: %v\n%s", tr.Changes, tr.Diff)
		}
	}
	if _, err := Approve(lock, reviews, []string{"hostile__notobject"}); fault.CodeOf(err) != fault.InvalidInput {
		t.Errorf("approving an unusable tool: %v", err)
	}
	done, err = Approve(lock, reviews, []string{"hostile"})
	if err != nil {
		t.Fatal(err)
	}
	if got := lock.Tools("hostile"); !slices.Equal(got, []string{"echo", "pid2", "read"}) {
		t.Errorf("after approving the upstream: %v (%v)", got, done)
	}
	reviews = reviewOf(t, f, lock)
	for _, tr := range reviews[0].Tools {
		if tr.State != StateApproved && tr.State != StateNotAllowed && tr.State != StateUnusable {
			t.Errorf("%s is %s after approval", tr.Name, tr.State)
		}
	}
}
