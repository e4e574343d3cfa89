package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStateCommands(t *testing.T) {
	dir := fileFixture(t)
	p := func(name string) string { return filepath.Join(dir, name) }
	mustNil(t, os.MkdirAll(p("stage/x"), 0o700))
	mustNil(t, os.MkdirAll(p("stage2"), 0o700))
	mustNil(t, os.MkdirAll(p("sub/stage"), 0o700))
	cases := []struct {
		name  string
		stdin string
		args  []string
		code  int
		out   string
	}{
		{"replace creates", "v1", []string{"state", "replace", p("state.json")}, 0, "(2 bytes)"},
		{"replace replaces", "version 2", []string{"state", "replace", p("state.json"), "--json"}, 0, `"bytes": 9`},
		{"replace a symlink", "x", []string{"state", "replace", p("link")}, 5, ""},
		{"replace a directory", "x", []string{"state", "replace", p("sub")}, 2, ""},
		{"replace a FIFO", "x", []string{"state", "replace", p("fifo")}, 2, ""},
		{"replace in a missing directory", "x", []string{"state", "replace", p("none/state")}, 3, ""},
		{"publish", "", []string{"state", "publish", p("stage"), p("pub")}, 0, "published"},
		{"publish onto existing", "", []string{"state", "publish", p("stage2"), p("pub")}, 4, ""},
		{"publish across parents", "", []string{"state", "publish", p("sub/stage"), p("pub2")}, 2, ""},
		{"publish missing staging", "", []string{"state", "publish", p("nope"), p("pub3")}, 3, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.stdin, c.args...)
			if code != c.code || !strings.Contains(out, c.out) {
				t.Fatalf("exit %d (want %d) out %q err %q", code, c.code, out, errOut)
			}
		})
	}
	if b, _ := os.ReadFile(p("state.json")); string(b) != "version 2" {
		t.Fatalf("state %q", b)
	}
	if b, _ := os.ReadFile(p("abc")); string(b) != "abc" {
		t.Fatal("replacing the symlink wrote through it")
	}
	if _, err := os.Stat(p("pub/x")); err != nil {
		t.Fatal("publication missing")
	}
}
