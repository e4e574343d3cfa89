package noreplace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/capkit/capkit/fault"
)

func TestRename(t *testing.T) {
	d := t.TempDir()
	dir, err := os.Open(d)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(d, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a", "new")
	write("taken", "old")
	if err := os.Mkdir(filepath.Join(d, "stage"), 0o700); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		from, to string
		code     fault.Code
	}{
		{"file to free name", "a", "b", ""},
		{"file onto existing file", "b", "taken", fault.Conflict},
		{"dir to free name", "stage", "pub", ""},
		{"missing source", "nope", "c", fault.NotFound},
		{"path element refused", "pub", "x/y", fault.Internal},
		{"dotdot refused", "pub", "..", fault.Internal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Rename(dir, c.from, c.to)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q, want %q (%v)", got, c.code, err)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(d, "taken")); string(b) != "old" {
		t.Fatalf("existing file replaced: %q", b)
	}
	if st, err := os.Stat(filepath.Join(d, "pub")); err != nil || !st.IsDir() {
		t.Fatalf("directory not published: %v", err)
	}
}
