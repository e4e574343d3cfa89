package policy

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
)

// fakeSession is an files.Session like kernel.Session's Local.
type fakeSession struct{ m sync.Map }

func (s *fakeSession) Local(key any, init func() any) any {
	v, _ := s.m.LoadOrStore(key, init())
	return v
}

func TestGates(t *testing.T) {
	ctx := context.Background()
	v1, v2 := files.VersionOf([]byte("one")), files.VersionOf([]byte("two"))
	type step struct {
		observe  files.Version // observed before the expectation, if set
		op       files.Op
		exists   bool
		current  files.Version
		wantCode fault.Code
		want     files.Guard
	}
	cases := []struct {
		name string
		step step
	}{
		{"create needs no read, guarded absent", step{op: files.OpWrite, want: files.Guard{Enabled: true}}},
		{"overwrite unread", step{op: files.OpWrite, exists: true, current: v1, wantCode: fault.Conflict}},
		{"overwrite read", step{observe: v1, op: files.OpWrite, exists: true, current: v1, want: files.Guard{Enabled: true, Version: v1}}},
		{"overwrite changed", step{observe: v1, op: files.OpWrite, exists: true, current: v2, wantCode: fault.Conflict}},
		{"recreate after delete", step{observe: v1, op: files.OpWrite, want: files.Guard{Enabled: true}}},
		{"edit unread", step{op: files.OpEdit, exists: true, current: v1, wantCode: fault.Conflict}},
		{"edit read", step{observe: v1, op: files.OpEdit, exists: true, current: v1, want: files.Guard{Enabled: true, Version: v1}}},
		{"edit changed", step{observe: v1, op: files.OpEdit, exists: true, current: v2, wantCode: fault.Conflict}},
		{"edit deleted", step{observe: v1, op: files.OpEdit, wantCode: fault.Conflict}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := files.NewEvents()
			if err := Attach(ev); err != nil {
				t.Fatal(err)
			}
			s := &fakeSession{}
			if !c.step.observe.IsZero() {
				ev.Observed(ctx, files.Observation{Session: s, Op: files.OpRead, Root: "/r", Name: "f", Version: c.step.observe})
			}
			e := &files.Expectation{Session: s, Op: c.step.op, Root: "/r", Name: "f", Exists: c.step.exists, Current: c.step.current}
			var err error
			if c.step.op == files.OpWrite {
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
	ev := files.NewEvents()
	if err := Attach(ev); err != nil {
		t.Fatal(err)
	}
	v := files.VersionOf([]byte("x"))
	a, b := &fakeSession{}, &fakeSession{}
	ev.Observed(ctx, files.Observation{Session: a, Op: files.OpRead, Root: "/r", Name: "f", Version: v})
	edit := func(s files.Session, root, name string) error {
		return ev.ExpectEdit(ctx, &files.Expectation{Session: s, Op: files.OpEdit, Root: root, Name: name, Exists: true, Current: v})
	}
	if err := edit(a, "/r", "f"); err != nil {
		t.Fatalf("session that read: %v", err)
	}
	for _, c := range []struct {
		s          files.Session
		root, name string
	}{{b, "/r", "f"}, {a, "/r", "g"}, {a, "/other", "f"}, {nil, "/r", "f"}} {
		if err := edit(c.s, c.root, c.name); fault.CodeOf(err) != fault.Conflict {
			t.Fatalf("%v %s %s: %v", c.s, c.root, c.name, err)
		}
	}
	// A session's own write updates what it observed.
	v2 := files.VersionOf([]byte("y"))
	ev.Observed(ctx, files.Observation{Session: a, Op: files.OpEdit, Root: "/r", Name: "f", Version: v2})
	if err := ev.ExpectEdit(ctx, &files.Expectation{Session: a, Op: files.OpEdit, Root: "/r", Name: "f", Exists: true, Current: v2}); err != nil {
		t.Fatalf("after own edit: %v", err)
	}
	if err := Attach(ev); !errors.Is(err, files.ErrGateTaken) {
		t.Fatalf("second Attach: %v", err)
	}
}
