package files

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/capkit/capkit/fault"
)

func TestEventsGates(t *testing.T) {
	ctx := context.Background()
	veto := func(context.Context, *Expectation) error { return fault.New(fault.Conflict, "no") }
	guard := func(_ context.Context, e *Expectation) error {
		e.Guard = Guard{Enabled: true, Version: e.Current}
		return nil
	}
	cases := []struct {
		name     string
		write    Gate
		edit     Gate
		op       Op
		wantCode fault.Code
		wantGard bool
	}{
		{"no gate write passes unguarded", nil, nil, OpWrite, "", false},
		{"no gate edit passes", nil, nil, OpEdit, "", false},
		{"write gate vetoes", veto, nil, OpWrite, fault.Conflict, false},
		{"edit gate vetoes", nil, veto, OpEdit, fault.Conflict, false},
		{"write gate guards", guard, veto, OpWrite, "", true},
		{"edit gate guards", veto, guard, OpEdit, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := NewEvents()
			if c.write != nil {
				if err := ev.SetWriteGate(c.write); err != nil {
					t.Fatal(err)
				}
			}
			if c.edit != nil {
				if err := ev.SetEditGate(c.edit); err != nil {
					t.Fatal(err)
				}
			}
			e := &Expectation{Op: c.op, Exists: true, Current: VersionOf([]byte("x"))}
			var err error
			if c.op == OpWrite {
				err = ev.ExpectWrite(ctx, e)
			} else {
				err = ev.ExpectEdit(ctx, e)
			}
			if got := fault.CodeOf(err); got != c.wantCode {
				t.Fatalf("code %q, want %q", got, c.wantCode)
			}
			if e.Guard.Enabled != c.wantGard {
				t.Fatalf("guard %v, want %v", e.Guard.Enabled, c.wantGard)
			}
		})
	}
}

func TestEventsSingleSlot(t *testing.T) {
	ev := NewEvents()
	g := func(context.Context, *Expectation) error { return nil }
	if err := ev.SetWriteGate(g); err != nil {
		t.Fatal(err)
	}
	if err := ev.SetWriteGate(g); !errors.Is(err, ErrGateTaken) {
		t.Fatalf("second write gate: %v", err)
	}
	if err := ev.SetEditGate(g); err != nil {
		t.Fatal(err)
	}
	if err := ev.SetEditGate(g); !errors.Is(err, ErrGateTaken) {
		t.Fatalf("second edit gate: %v", err)
	}
	if err := NewEvents().SetEditGate(nil); err == nil {
		t.Fatal("nil gate accepted")
	}
}

func TestEventsObserversConcurrent(t *testing.T) {
	ev := NewEvents()
	var mu sync.Mutex
	got := map[Op]int{}
	ev.OnObserved(func(_ context.Context, o Observation) {
		mu.Lock()
		got[o.Op]++
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 0 {
				ev.OnObserved(func(context.Context, Observation) {})
			}
			ev.Observed(context.Background(), Observation{Op: OpRead})
		}()
	}
	wg.Wait()
	if got[OpRead] != 8 {
		t.Fatalf("observed %d reads, want 8", got[OpRead])
	}
}

func TestVersion(t *testing.T) {
	a, b := VersionOf([]byte("hello")), VersionOf([]byte("hellp"))
	empty := VersionOf(nil)
	cases := []struct {
		name  string
		x, y  Version
		equal bool
	}{
		{"same content", a, VersionOf([]byte("hello")), true},
		{"different content same size", a, b, false},
		{"empty file is not absent", empty, Version{}, false},
		{"absent equals absent", Version{}, Version{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if (c.x == c.y) != c.equal {
				t.Fatalf("%v == %v: %v, want %v", c.x, c.y, c.x == c.y, c.equal)
			}
		})
	}
	h := NewVersionHash()
	h.Write([]byte("hel"))
	h.Write([]byte("lo"))
	if h.Version() != a {
		t.Fatalf("streamed %v, whole %v", h.Version(), a)
	}
	if !(Version{}).IsZero() || a.IsZero() || a.Size() != 5 || a.String() == "" || (Version{}).String() != "absent" {
		t.Fatal("accessors")
	}
}
