package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tiny random BERT fixture of search/semindex/bert/testdata.
const (
	semModel = "../../../../search/semindex/bert/testdata/tiny"
	semPin   = "776bd478161ed9031ef3ec1a88b1ea13118c2582f02631d2ec81cfcf8e578be8"
)

func TestSemindexCommands(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	mustNil(t, os.WriteFile(p("fox.txt"), []byte("The quick brown fox jumps over the lazy dog."), 0o600))
	mustNil(t, os.WriteFile(p("cafe.txt"), []byte("Café crème brûlée, naïve façade."), 0o600))
	db := p("sem.db")
	model := []string{"--model", semModel, "--pin", semPin}
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"add without a model", []string{"semindex", "add", db, "fox", p("fox.txt")}, 2, ""},
		{"add with a missing model", []string{"semindex", "add", db, "fox", p("fox.txt"), "--model", dir}, 7, ""},
		{"add with the default pin", []string{"semindex", "add", db, "fox", p("fox.txt"), "--model", semModel}, 9, ""},
		{"search a missing index", append([]string{"semindex", "search", db, "fox"}, model...), 3, ""},
		{"add", append([]string{"semindex", "add", db, "fox", p("fox.txt")}, model...), 0, "1 chunks"},
		{"add another", append([]string{"semindex", "add", db, "cafe", p("cafe.txt"), "--digest", "v1"}, model...), 0, ""},
		{"add with a stale expectation", append([]string{"semindex", "add", db, "cafe", p("cafe.txt"), "--expect-digest", "v0"}, model...), 4, ""},
		{"scope", []string{"semindex", "scope", db, "cafe-only", "cafe"}, 0, "1 refs"},
		{"search", append([]string{"semindex", "search", db, "Café crème brûlée, naïve façade.", "--json"}, model...), 0, `"scanned": 2`},
		{"search a scope", append([]string{"semindex", "search", db, "fox", "--scope", "cafe-only"}, model...), 0, "cafe [0,32)"},
		{"search over the hit limit", append([]string{"semindex", "search", db, "fox", "--limit", "1001"}, model...), 6, ""},
		{"status", []string{"semindex", "status", db, "--current", "cafe=v2"}, 0, "stale"},
		{"audit", append([]string{"semindex", "audit", db}, model...), 0, "audit ok"},
		{"remove", []string{"semindex", "remove", db, "fox"}, 0, "removed"},
		{"remove again", []string{"semindex", "remove", db, "fox"}, 3, ""},
		{"embed", append([]string{"embed", "hello", "world"}, model...), 0, "]\n["},
		{"embed too long", append([]string{"embed", strings.Repeat("fox ", 255)}, model...), 6, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, "", c.args...)
			if code != c.code || !strings.Contains(out, c.out) {
				t.Fatalf("exit %d (want %d) out %q err %q", code, c.code, out, errOut)
			}
		})
	}
	_, out, _ := run(t, "", append([]string{"embed", "hello"}, model...)...)
	var v []float64
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v) != 32 {
		t.Fatalf("embed output %q: %v", out, err)
	}
}
