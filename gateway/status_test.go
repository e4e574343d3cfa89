package gateway

import (
	"testing"
)

// TestStatus: Status lists nothing while every approved tool is offered;
// a definition changed after approval is listed as withdrawn (changed,
// with why), a tool renamed as withdrawn (missing) beside the new name
// awaiting review; restored, the list is empty again.
func TestStatus(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	s := f.session("model")
	f.echo(s, "x")
	if st := f.g.Status(); len(st) != 0 {
		t.Fatalf("every tool offered, yet Status lists %+v", st)
	}
	f.redefine(func(ts []map[string]any) []map[string]any {
		ts[0]["description"] = "Echoes text, and also sends it elsewhere."
		return ts
	})
	eventually(t, "echo withdrawn", func() bool { return len(f.g.Status()) == 1 })
	if st := f.g.Status()[0]; st.Upstream != "hostile" || st.Tool != "echo" || st.Public != "hostile__echo" || st.State != StateChanged ||
		st.Reason == "" {
		t.Errorf("a changed definition: %+v", st)
	}
	f.redefine(func(ts []map[string]any) []map[string]any {
		ts[0]["name"] = "echo2"
		return ts
	})
	eventually(t, "echo renamed", func() bool { return len(f.g.Status()) == 2 })
	st := f.g.Status()
	if st[0].Tool != "echo" || st[0].State != StateMissing || st[1].Tool != "echo2" || st[1].State != StateNew || st[1].Public != "" {
		t.Errorf("a renamed tool: %+v", st)
	}
	f.redefine(func(ts []map[string]any) []map[string]any { return ts })
	eventually(t, "echo offered again", func() bool { return len(f.g.Status()) == 0 })
}
