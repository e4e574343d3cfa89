package filecontext

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/fs"
)

// fakeSession is an fs.Session like kernel.Session's Local.
type fakeSession struct{ m sync.Map }

func (s *fakeSession) Local(key any, init func() any) any {
	v, _ := s.m.LoadOrStore(key, init())
	return v
}

func TestGates(t *testing.T) {
	ctx := context.Background()
	v1, v2 := fs.VersionOf([]byte("one")), fs.VersionOf([]byte("two"))
	type step struct {
		observe  fs.Version // observed before the expectation, if set
		op       fs.Op
		exists   bool
		current  fs.Version
		wantCode fault.Code
		want     fs.Guard
	}
	cases := []struct {
		name string
		step step
	}{
		{"create needs no read, guarded absent", step{op: fs.OpWrite, want: fs.Guard{Enabled: true}}},
		{"overwrite unread", step{op: fs.OpWrite, exists: true, current: v1, wantCode: fault.Conflict}},
		{"overwrite read", step{observe: v1, op: fs.OpWrite, exists: true, current: v1, want: fs.Guard{Enabled: true, Version: v1}}},
		{"overwrite changed", step{observe: v1, op: fs.OpWrite, exists: true, current: v2, wantCode: fault.Conflict}},
		{"recreate after delete", step{observe: v1, op: fs.OpWrite, want: fs.Guard{Enabled: true}}},
		{"edit unread", step{op: fs.OpEdit, exists: true, current: v1, wantCode: fault.Conflict}},
		{"edit read", step{observe: v1, op: fs.OpEdit, exists: true, current: v1, want: fs.Guard{Enabled: true, Version: v1}}},
		{"edit changed", step{observe: v1, op: fs.OpEdit, exists: true, current: v2, wantCode: fault.Conflict}},
		{"edit deleted", step{observe: v1, op: fs.OpEdit, wantCode: fault.Conflict}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := fs.NewEvents()
			if err := Attach(ev); err != nil {
				t.Fatal(err)
			}
			s := &fakeSession{}
			if !c.step.observe.IsZero() {
				ev.Observed(ctx, fs.Observation{Session: s, Op: fs.OpRead, Root: "/r", Name: "f", Version: c.step.observe})
			}
			e := &fs.Expectation{Session: s, Op: c.step.op, Root: "/r", Name: "f", Exists: c.step.exists, Current: c.step.current}
			var err error
			if c.step.op == fs.OpWrite {
				err = ev.ExpectWrite(ctx, e)
			} else {
				err = ev.ExpectEdit(ctx, e)
			}
			if got := fault.CodeOf(err); got != c.step.wantCode {
				t.Fatalf("code %q (%v), want %q", got, err, c.step.wantCode)
			}
			if err == nil && e.Guard != c.step.want {
				t.Fatalf("guard %+v, want %+v", e.Guard, c.step.want)
			}
		})
	}
}

func TestObservationsArePerSessionAndPerFile(t *testing.T) {
	ctx := context.Background()
	ev := fs.NewEvents()
	if err := Attach(ev); err != nil {
		t.Fatal(err)
	}
	v := fs.VersionOf([]byte("x"))
	a, b := &fakeSession{}, &fakeSession{}
	ev.Observed(ctx, fs.Observation{Session: a, Op: fs.OpRead, Root: "/r", Name: "f", Version: v})
	edit := func(s fs.Session, root, name string) error {
		return ev.ExpectEdit(ctx, &fs.Expectation{Session: s, Op: fs.OpEdit, Root: root, Name: name, Exists: true, Current: v})
	}
	if err := edit(a, "/r", "f"); err != nil {
		t.Fatalf("session that read: %v", err)
	}
	for _, c := range []struct {
		s          fs.Session
		root, name string
	}{{b, "/r", "f"}, {a, "/r", "g"}, {a, "/other", "f"}, {nil, "/r", "f"}} {
		if err := edit(c.s, c.root, c.name); fault.CodeOf(err) != fault.Conflict {
			t.Fatalf("%v %s %s: %v", c.s, c.root, c.name, err)
		}
	}
	// A session's own write updates what it observed.
	v2 := fs.VersionOf([]byte("y"))
	ev.Observed(ctx, fs.Observation{Session: a, Op: fs.OpEdit, Root: "/r", Name: "f", Version: v2})
	if err := ev.ExpectEdit(ctx, &fs.Expectation{Session: a, Op: fs.OpEdit, Root: "/r", Name: "f", Exists: true, Current: v2}); err != nil {
		t.Fatalf("after own edit: %v", err)
	}
	if err := Attach(ev); !errors.Is(err, fs.ErrGateTaken) {
		t.Fatalf("second Attach: %v", err)
	}
}
