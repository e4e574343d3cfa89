package examples

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// capkit is the binary the examples run with.
var capkit string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "capkit-examples-")
	if err != nil {
		panic(err)
	}
	capkit = filepath.Join(dir, "capkit")
	build := exec.Command("go", "build", "-o", capkit, "github.com/capkit/capkit/cmd/capkit")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// checkout copies this folder to a temporary "examples" folder and returns
// its parent, where the commands in the examples run as written.
func checkout(t *testing.T) string {
	t.Helper()
	top := t.TempDir()
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil || strings.HasSuffix(p, "_test.go") {
			return err
		}
		dst := filepath.Join(top, "examples", p)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// command is the "#   capkit …" line of an example's comment.
func command(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "#   capkit "); ok {
			return strings.Fields(line)
		}
	}
	t.Fatalf("%s names no command to run it", name)
	return nil
}

// runAsWritten runs an example's own command twice in one fresh copy of
// this folder and decodes its JSON result. An example leaves the files it
// was given as it found them: the second run gives the same result and
// the copy is unchanged after both.
func runAsWritten(t *testing.T, name string) map[string]any {
	t.Helper()
	top := checkout(t)
	var first map[string]any
	for run := 1; run <= 2; run++ {
		cmd := exec.Command(capkit, command(t, name)...)
		cmd.Dir = top
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s, run %d: %v\n%s", name, run, err, stderr.String())
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s, run %d: %s: %v", name, run, out, err)
		}
		if run == 1 {
			first = v
		} else if !reflect.DeepEqual(v, first) {
			t.Fatalf("%s: the second run gave %v, the first %v", name, v, first)
		}
	}
	unchanged(t, top)
	return first
}

// unchanged fails unless the copy under top holds this folder's files
// as they are, and no others but the logs (logs/, which git ignores).
func unchanged(t *testing.T, top string) {
	t.Helper()
	copied := filepath.Join(top, "examples")
	err := filepath.WalkDir(copied, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(copied, p)
		switch {
		case err != nil:
			return err
		case d.IsDir() && rel == "logs":
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		got, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		want, err := os.ReadFile(rel)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("the example left examples/%s changed or new (%v)", rel, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCatalogGrep(t *testing.T) {
	v := runAsWritten(t, "catalog-grep.star")
	if v["pattern"] != "FIXME(review)" {
		t.Fatalf("%v", v)
	}
	if got, want := v["files"], []any{"docs/notes.md", "src/main.go"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	if m := v["matches"].([]any); len(m) != 2 {
		t.Fatalf("matches %v", m)
	}
}

func TestEditReread(t *testing.T) {
	v := runAsWritten(t, "edit-reread.star")
	if v["replacements"] != 1.0 || v["lines_before"] != 1.0 ||
		!strings.Contains(v["after"].(string), "Goodbye, world") || !strings.Contains(v["restored"].(string), "Hello, world") {
		t.Fatalf("%v", v)
	}
}

// TestConfigServes: the example configuration starts the tools as
// written (catalog and script sections included).
func TestConfigServes(t *testing.T) {
	top := checkout(t)
	cmd := exec.Command(capkit, "tools", "--config", "examples/capkit.toml", "--all")
	cmd.Dir = top
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, tool := range []string{"review_notes", "run_script", "read_file"} {
		if !strings.Contains(string(out), tool) {
			t.Errorf("capkit tools lacks %s:\n%s", tool, out)
		}
	}
}
