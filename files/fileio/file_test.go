package fileio

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
)

func TestOpenTarget(t *testing.T) {
	dir := fixture(t)
	outside := fixture(t)
	must(t, os.Symlink(outside, filepath.Join(dir, "out")))
	in := scope.In([]string{dir}, capability.Protected{})
	cases := []struct {
		name string
		code fault.Code
		want string
	}{
		{"abc", "", "abc"},
		{"sub/inner", "", "inner"},
		{"sublink/inner", "", "inner"}, // a symlink before the last element, inside the root
		{"link", fault.Denied, ""},
		{"out/abc", fault.Denied, ""},
		{"../" + filepath.Base(outside) + "/abc", fault.Denied, ""},
		{"sub", fault.InvalidInput, ""},
		{"fifo", fault.InvalidInput, ""},
		{"nope", fault.NotFound, ""},
		{".", fault.InvalidInput, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := openIn(in, c.name)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if err != nil {
				return
			}
			defer f.Close()
			got, err := readAll(context.Background(), f, 2)
			if err != nil || string(got) != c.want {
				t.Fatalf("read %q, %v", got, err)
			}
		})
	}
}

func openIn(s *scope.Scope, name string) (*File, error) {
	t, err := s.Resolve(name)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	return OpenTarget(t, "file")
}
