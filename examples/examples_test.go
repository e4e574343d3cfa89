package examples

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/files/fixedfiles"
	"github.com/capkit/capkit/files/policy"
	"github.com/capkit/capkit/files/tools"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/serve/script"
)

// workspace builds a root with a few files, a catalog whose entry names a
// pattern, and an untrusted session over both.
func workspace(t *testing.T) (*kernel.Session, string) {
	t.Helper()
	root := t.TempDir()
	for name, content := range map[string]string{
		"greeting.txt":  "Hello, world\n",
		"src/main.go":   "package main\n\n// FIXME(review): handle errors\nfunc main() {}\n",
		"src/util.go":   "package main\n\n// nothing to see\n",
		"docs/notes.md": "FIXME(review): document the flags\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reviewed := filepath.Join(t.TempDir(), "pattern.txt")
	if err := os.WriteFile(reviewed, []byte("FIXME(review)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cb, err := fixedfiles.NewBuilder(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cb.InsertPath("todo.pattern", reviewed); err != nil {
		t.Fatal(err)
	}
	cat, err := cb.Build()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })

	b := kernel.NewBuilder(nil)
	if err := tools.RegisterTools(b, &tools.Options{Events: policy.NewEvents()}); err != nil {
		t.Fatal(err)
	}
	if err := fixedfiles.RegisterTool(b, kernel.Policy{Name: "review_notes", MaxCalls: 4}, kernel.Meta{}, cat); err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	c, err := capability.New("assistant",
		[]capability.Effect{capability.ReadFile, capability.EditFile, capability.Search, capability.List, capability.CatalogRead},
		capability.Scope{Roots: []string{root}, Resources: []string{"review_notes"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.NewSession("assistant", []capability.Capability{c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, root
}

func runExample(t *testing.T, name string, s *kernel.Session) map[string]any {
	t.Helper()
	src, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	res, err := script.Run(context.Background(), s, src, &script.Options{Filename: name})
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(res.Value, &v); err != nil {
		t.Fatalf("%s: %v", res.Value, err)
	}
	return v
}

func TestCatalogGrep(t *testing.T) {
	s, _ := workspace(t)
	v := runExample(t, "catalog-grep.star", s)
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
	s, root := workspace(t)
	v := runExample(t, "edit-reread.star", s)
	if v["replacements"] != 1.0 || v["lines_before"] != 1.0 {
		t.Fatalf("%v", v)
	}
	data, err := os.ReadFile(filepath.Join(root, "greeting.txt"))
	if err != nil || string(data) != "Goodbye, world\n" {
		t.Fatalf("%q %v", data, err)
	}
}
