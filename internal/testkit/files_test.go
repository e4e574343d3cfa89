package testkit

import (
	"context"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
)

func TestFiles(t *testing.T) {
	f := Files{"a.txt": []byte("abcd")}
	read, err := capability.New(Actor, []capability.Effect{capability.ReadFile}, capability.Scope{Roots: []string{"/srv"}})
	if err != nil {
		t.Fatal(err)
	}
	parse, err := capability.New(Actor, []capability.Effect{capability.Parse}, capability.Scope{Roots: []string{"/srv"}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		caps capability.Set
		path string
		max  int64
		code fault.Code
	}{
		{"at the bound", capability.Set{read}, "a.txt", 4, ""},
		{"one past the bound", capability.Set{read}, "a.txt", 3, fault.Limit},
		{"missing", capability.Set{read}, "b.txt", 4, fault.NotFound},
		{"no read root", capability.Set{parse}, "a.txt", 4, fault.Denied},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := f.ReadFile(context.Background(), c.caps.Roots(capability.ReadFile), c.path, c.max)
			if fault.CodeOf(err) != c.code || (err == nil && string(got) != "abcd") {
				t.Fatalf("got %q %v, want code %q", got, err, c.code)
			}
		})
	}
}
