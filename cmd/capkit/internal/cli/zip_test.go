package cli

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestZipCommands(t *testing.T) {
	dir := t.TempDir()
	mustNil(t, os.MkdirAll(filepath.Join(dir, "src", "sub"), 0o755))
	mustNil(t, os.WriteFile(filepath.Join(dir, "src", "a.txt"), []byte("alpha"), 0o644))
	mustNil(t, os.WriteFile(filepath.Join(dir, "src", "sub", "b.txt"), []byte("beta"), 0o644))
	p := func(name string) string { return filepath.Join(dir, name) }

	code, manifest, errOut := run(t, "", "zip", "create", p("out.zip"), "--dir", p("src"), "a.txt", "sub/b.txt")
	if code != 0 || !strings.Contains(manifest, "  sub/b.txt\n") {
		t.Fatalf("create: exit %d out %q err %q", code, manifest, errOut)
	}
	mustNil(t, os.WriteFile(p("MANIFEST"), []byte(manifest), 0o644))
	bad := strings.Replace(manifest, manifest[:4], "0000", 1)
	mustNil(t, os.WriteFile(p("BAD"), []byte(bad), 0o644))

	evil, err := os.Create(p("evil.zip"))
	mustNil(t, err)
	zw := zip.NewWriter(evil)
	w, _ := zw.Create("../evil.txt")
	w.Write([]byte("x"))
	zw.Close()
	evil.Close()

	cases := []struct {
		name  string
		stdin string
		args  []string
		code  int
		out   string
	}{
		{"create onto existing", "", []string{"zip", "create", p("out.zip"), "--dir", p("src"), "a.txt"}, 4, ""},
		{"create outside dir", "", []string{"zip", "create", p("o2.zip"), "--dir", p("src"), "../MANIFEST"}, 2, ""},
		{"list", "", []string{"zip", "list", p("out.zip")}, 0, "sub/b.txt"},
		{"list json", "", []string{"zip", "list", p("out.zip"), "--json"}, 0, `"entries"`},
		{"verify", "", []string{"zip", "verify", p("out.zip"), "--expect", p("MANIFEST")}, 0, "ok: 2 files"},
		{"verify mismatch", "", []string{"zip", "verify", p("out.zip"), "--expect", p("BAD")}, 9, ""},
		{"extract without manifest", "", []string{"zip", "extract", p("out.zip"), p("x")}, 2, ""},
		{"extract mismatch", "", []string{"zip", "extract", p("out.zip"), p("x"), "--expect", p("BAD")}, 9, ""},
		{"extract", "", []string{"zip", "extract", p("out.zip"), p("x"), "--expect", p("MANIFEST")}, 0, "extracted 2 files"},
		{"extract manifest on stdin", manifest, []string{"zip", "extract", p("out.zip"), p("y"), "--expect", "-", "--json"}, 0, `"files": 2`},
		{"extract onto existing", "", []string{"zip", "extract", p("out.zip"), p("x"), "--expect", p("MANIFEST")}, 4, ""},
		{"zip slip refused", "0000000000000000000000000000000000000000000000000000000000000000  evil.txt\n", []string{"zip", "extract", p("evil.zip"), p("z"), "--expect", "-"}, 2, ""},
		{"missing archive", "", []string{"zip", "list", p("none.zip")}, 3, ""},
		{"not an archive", "", []string{"zip", "list", p("MANIFEST")}, 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.stdin, c.args...)
			if code != c.code || !strings.Contains(out, c.out) {
				t.Fatalf("exit %d (want %d) out %q err %q", code, c.code, out, errOut)
			}
		})
	}
	if b, err := os.ReadFile(p("x/sub/b.txt")); err != nil || string(b) != "beta" {
		t.Fatalf("extracted %q %v", b, err)
	}
	if _, err := os.Stat(p("z")); err == nil {
		t.Fatal("refused extraction left a directory")
	}
}
