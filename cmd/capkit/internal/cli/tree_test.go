package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTreeCommands(t *testing.T) {
	dir := fileFixture(t)
	mustNil(t, os.WriteFile(filepath.Join(dir, "sub", "inner"), []byte("12345"), 0o600))
	p := func(name string) string { return filepath.Join(dir, name) }
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"list", []string{"tree", "list", dir}, 0, "2 files, 1 directories, 8 bytes; left out: 1 symlinks, 1 special files"},
		{"list json", []string{"tree", "list", dir, "--json"}, 0, `"path": "sub/inner"`},
		{"list at the entry bound", []string{"tree", "list", dir, "--max-entries", "5"}, 0, "sub/inner"},
		{"list one past the entry bound", []string{"tree", "list", dir, "--max-entries", "4"}, 6, ""},
		{"list at the byte bound", []string{"tree", "list", dir, "--max-bytes", "8"}, 0, "sub/inner"},
		{"list one past the byte bound", []string{"tree", "list", dir, "--max-bytes", "7"}, 6, ""},
		{"list at the depth bound", []string{"tree", "list", dir, "--max-depth", "2"}, 0, "sub/inner"},
		{"list one past the depth bound", []string{"tree", "list", dir, "--max-depth", "1"}, 6, ""},
		{"list past the hard depth", []string{"tree", "list", dir, "--max-depth", "257"}, 2, ""},
		{"list a symlink", []string{"tree", "list", p("link")}, 5, ""},
		{"list a file", []string{"tree", "list", p("abc")}, 2, ""},
		{"list missing", []string{"tree", "list", p("nope")}, 3, ""},
		{"stamp", []string{"tree", "stamp", p("abc")}, 0, "file mode 0644 size 3 "},
		{"stamp a symlink", []string{"tree", "stamp", p("link"), "--json"}, 0, `"type": "symlink"`},
		{"stamp missing", []string{"tree", "stamp", p("nope")}, 3, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, "", c.args...)
			if code != c.code || !strings.Contains(out, c.out) {
				t.Fatalf("exit %d (want %d) out %q err %q", code, c.code, out, errOut)
			}
		})
	}
}
