package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fileFixture makes a directory with a regular file, a symlink, a FIFO
// and a subdirectory.
func fileFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mustNil(t, os.WriteFile(filepath.Join(dir, "abc"), []byte("abc"), 0o644))
	mustNil(t, os.Symlink("abc", filepath.Join(dir, "link")))
	mustNil(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	mustNil(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	return dir
}

func TestFileCommands(t *testing.T) {
	dir := fileFixture(t)
	p := func(name string) string { return filepath.Join(dir, name) }
	const abcSum = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"read", []string{"file", "read", p("abc")}, 0, "abc"},
		{"read json", []string{"file", "read", p("abc"), "--json"}, 0, `"content": "YWJj"`},
		{"read at the bound", []string{"file", "read", p("abc"), "--max-bytes", "3"}, 0, "abc"},
		{"read one past the bound", []string{"file", "read", p("abc"), "--max-bytes", "2"}, 6, ""},
		{"read past the buffered maximum", []string{"file", "read", p("abc"), "--max-bytes", "134217729"}, 6, ""},
		{"read a symlink", []string{"file", "read", p("link")}, 5, ""},
		{"read a FIFO", []string{"file", "read", p("fifo")}, 2, ""},
		{"read a directory", []string{"file", "read", p("sub")}, 2, ""},
		{"read a device", []string{"file", "read", "/dev/zero"}, 2, ""},
		{"read missing", []string{"file", "read", p("nope")}, 3, ""},
		{"digest", []string{"file", "digest", p("abc")}, 0, abcSum + "  " + p("abc")},
		{"digest json", []string{"file", "digest", p("abc"), "--json"}, 0, `"sha256": "` + abcSum},
		{"digest over budget", []string{"file", "digest", p("abc"), "--max-bytes", "2"}, 6, ""},
		{"digest zero budget", []string{"file", "digest", p("abc"), "--max-bytes", "0"}, 2, ""},
		{"copy", []string{"file", "copy", p("abc"), p("copy")}, 0, "copied 3 bytes"},
		{"copy onto existing", []string{"file", "copy", p("abc"), p("copy")}, 4, ""},
		{"copy over budget", []string{"file", "copy", p("abc"), p("copy2"), "--max-bytes", "2"}, 6, ""},
		{"copy a symlink", []string{"file", "copy", p("link"), p("copy3")}, 5, ""},
		{"copy json", []string{"file", "copy", p("abc"), p("copy4"), "--json"}, 0, `"bytes": 3`},
		{"missing argument", []string{"file", "copy", p("abc")}, 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, "", c.args...)
			if code != c.code || !strings.Contains(out, c.out) {
				t.Fatalf("exit %d (want %d) out %q err %q", code, c.code, out, errOut)
			}
			if code != 0 && !strings.HasPrefix(errOut, "capkit: ") {
				t.Fatalf("failure not reported on stderr: %q", errOut)
			}
			if code == 0 && errOut != "" {
				t.Fatalf("stderr not quiet when piped: %q", errOut)
			}
		})
	}
	if b, _ := os.ReadFile(p("copy")); string(b) != "abc" {
		t.Fatalf("copy holds %q", b)
	}
}

func TestFileReadIsExact(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bin")
	data := []byte{0, 1, 2, 0xff, '\n', 'x'}
	mustNil(t, os.WriteFile(path, data, 0o600))
	code, out, _ := run(t, "", "file", "read", path)
	if code != 0 || out != string(data) {
		t.Fatalf("exit %d out %q", code, out)
	}
	code, out, _ = run(t, "", "file", "read", path, "--json")
	var v struct {
		Size    int    `json:"size"`
		Content []byte `json:"content"`
	}
	mustNil(t, json.Unmarshal([]byte(out), &v))
	if code != 0 || v.Size != len(data) || string(v.Content) != string(data) {
		t.Fatalf("exit %d %+v", code, v)
	}
}

func TestFailureJSON(t *testing.T) {
	dir := fileFixture(t)
	code, out, _ := run(t, "", "file", "digest", filepath.Join(dir, "link"), "--json")
	if code != 5 || !strings.Contains(out, `"code": "denied"`) {
		t.Fatalf("exit %d out %q", code, out)
	}
}
