package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJournalCommands(t *testing.T) {
	root := t.TempDir()
	mustNil(t, os.Chmod(root, 0o700))
	shared := t.TempDir()
	mustNil(t, os.Chmod(shared, 0o755))
	file := filepath.Join(root, "ev.jsonl")
	steps := []struct {
		name  string
		stdin string
		args  []string
		code  int
		out   string
		after func()
	}{
		{"append", `{"b":1,"a":2}`, []string{"journal", "append", root, "ev"}, 0, "1 ", nil},
		{"append json", "\"two\"\n", []string{"journal", "append", root, "ev", "--json"}, 0, `"seq": 2`, nil},
		{"duplicate keys", `{"a":1,"a":2}`, []string{"journal", "append", root, "ev"}, 2, "", nil},
		{"not JSON", `{`, []string{"journal", "append", root, "ev"}, 2, "", nil},
		{"shared root", `1`, []string{"journal", "append", shared, "ev"}, 5, "", nil},
		{"bad name", `1`, []string{"journal", "append", root, "Ev/x"}, 2, "", nil},
		{"verify", "", []string{"journal", "verify", root, "ev"}, 0, "ok: 2 records", nil},
		{"read", "", []string{"journal", "read", root, "ev"}, 0, `"event":{"a":2,"b":1}`, nil},
		{"missing journal", "", []string{"journal", "verify", root, "none"}, 3, "", func() {
			f, _ := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(`{"seq":3,"pr`)
			f.Close()
		}},
		{"incomplete tail", "", []string{"journal", "verify", root, "ev"}, 9, "", nil},
		{"append refused after it", `3`, []string{"journal", "append", root, "ev"}, 9, "", nil},
		{"repair needs --yes", "", []string{"journal", "repair", root, "ev"}, 2, "", nil},
		{"repair", "", []string{"journal", "repair", root, "ev", "--yes"}, 0, "removed an incomplete record", nil},
		{"append after repair", `3`, []string{"journal", "append", root, "ev"}, 0, "3 ", func() {
			b, _ := os.ReadFile(file)
			os.WriteFile(file, []byte(strings.Replace(string(b), `"two"`, `"tw0"`, 1)), 0o600)
		}},
		{"edited record", "", []string{"journal", "verify", root, "ev", "--json"}, 9, `record 2 (line 2`, nil},
		{"repair refuses a corrupt record", "", []string{"journal", "repair", root, "ev", "--yes"}, 9, "", nil},
	}
	for _, s := range steps {
		code, out, errOut := run(t, s.stdin, s.args...)
		if code != s.code || !strings.Contains(out, s.out) {
			t.Fatalf("%s: exit %d (want %d) out %q err %q", s.name, code, s.code, out, errOut)
		}
		if s.after != nil {
			s.after()
		}
	}
}

// TestJournalAppendCreatesAPrivateRoot: the README's line works as
// written: the first append creates a missing root, private (mode 700);
// its parent must exist, and reading a missing root is not_found.
func TestJournalAppendCreatesAPrivateRoot(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "journal")
	runCases(t, []cmdCase{
		{name: "verify a missing root", args: []string{"journal", "verify", root, "events"}, code: 3},
		{name: "append creates the root", stdin: `{"a":1}`, args: []string{"journal", "append", root, "events"}, out: "1 "},
		{name: "then verify", args: []string{"journal", "verify", root, "events"}, out: "ok: 1 records"},
		{name: "no missing parents", stdin: `1`, args: []string{"journal", "append", filepath.Join(dir, "none", "journal"), "events"}, code: 3},
	})
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Fatalf("root %v %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "none")); err == nil {
		t.Fatal("a missing parent was created")
	}
	// In the working directory, as the README writes it.
	t.Chdir(dir)
	runCases(t, []cmdCase{{name: "relative", stdin: `{"b":2}`, args: []string{"journal", "append", "./journal2", "events"}, out: "1 "}})
}
