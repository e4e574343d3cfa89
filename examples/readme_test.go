package examples

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readmeBlock returns the fenced block of the given language that follows
// heading in README.md.
func readmeBlock(t *testing.T, heading, lang string) string {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q", heading)
	}
	_, block, ok := strings.Cut(after, "```"+lang+"\n")
	if !ok {
		t.Fatalf("README.md has no %s block after %q", lang, heading)
	}
	block, _, _ = strings.Cut(block, "```\n")
	return block
}

// TestReadmeLibrary: the README's library example is library's body, which
// TestLibrary compiles and runs.
func TestReadmeLibrary(t *testing.T) {
	src, err := os.ReadFile("library_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(src), "// library example begins\n")
	body, _, _ = strings.Cut(body, "\t// library example ends")
	var want strings.Builder
	for _, line := range strings.SplitAfter(body, "\n") {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}
	if got := readmeBlock(t, "## As a Go library", "go"); got != want.String() {
		t.Errorf("README's library example differs from examples/library_test.go:\n%s\nwant:\n%s", got, want.String())
	}
}

// TestReadmeMinimalConfig: the README's minimal capkit.toml, beside a Go
// module, grants run_test and run_shell; capkit test runs the tests and
// run_shell a contained command, as the README says.
func TestReadmeMinimalConfig(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"capkit.toml": readmeBlock(t, "## A minimal capkit.toml", "toml"),
		"go.mod":      "module readme\n\ngo 1.26\n",
		"p.go":        "package p\n", // no test files: go test compiles little, in a cold cache
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(capkit, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("capkit %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	tools := run("tools", "--config", "capkit.toml")
	for _, tool := range []string{"run_test", "run_shell", "edit_file"} {
		if !strings.Contains(tools, tool) {
			t.Errorf("capkit tools lacks %s:\n%s", tool, tools)
		}
	}
	if out := run("test", "--config", "capkit.toml"); !strings.Contains(out, "[no test files]") {
		t.Errorf("capkit test:\n%s", out)
	}
	if out := run("call", "run_shell", `{"command": "echo contained > made.txt && cat made.txt"}`, "--config", "capkit.toml"); !strings.Contains(out, "contained") {
		t.Errorf("run_shell:\n%s", out)
	}
}
