package toolinput

import (
	"context"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	capfs "github.com/capkit/capkit/fs"
	"github.com/capkit/capkit/kernel"
)

type fakeReader struct{ gotMax int64 }

func (f *fakeReader) ReadFile(_ context.Context, caps capability.Set, path string, max int64) ([]byte, error) {
	f.gotMax = max
	if len(caps.Roots(capability.ReadFile)) == 0 {
		return nil, fault.New(fault.Denied, "no root is granted for this operation")
	}
	return []byte("from " + path), nil
}

func call(t *testing.T, effects ...capability.Effect) *kernel.Call {
	t.Helper()
	rt, err := kernel.NewBuilder(&kernel.Options{DisableToolSearch: true}).Build()
	if err != nil {
		t.Fatal(err)
	}
	c, err := capability.New("a", effects, capability.Scope{Roots: []string{"/srv"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.NewSession("a", []capability.Capability{c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &kernel.Call{Session: s}
}

func TestRead(t *testing.T) {
	r := &fakeReader{}
	cases := []struct {
		name       string
		reader     bool
		effects    []capability.Effect
		text, path string
		want       string
		code       fault.Code
	}{
		{"text", false, nil, "abc", "", "abc", ""},
		{"text at the bound", false, nil, "abcd", "", "abcd", ""},
		{"text past the bound", false, nil, "abcde", "", "", fault.Limit},
		{"path", true, []capability.Effect{capability.ReadFile}, "", "x.html", "from x.html", ""},
		{"path without read roots", true, []capability.Effect{capability.Parse}, "", "x.html", "", fault.Denied},
		{"path without a reader", false, []capability.Effect{capability.ReadFile}, "", "x.html", "", fault.Denied},
		{"both", true, []capability.Effect{capability.ReadFile}, "abc", "x.html", "", fault.InvalidInput},
		{"neither", true, nil, "", "", "", fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var reader capfs.FileReader
			if c.reader {
				reader = r
			}
			got, err := Read(context.Background(), call(t, c.effects...), reader, c.text, c.path, 4, "doc")
			if fault.CodeOf(err) != c.code || string(got) != c.want {
				t.Fatalf("got %q %v", got, err)
			}
			if c.path != "" && c.code == "" && r.gotMax != 4 {
				t.Fatalf("reader bound %d", r.gotMax)
			}
		})
	}
}
