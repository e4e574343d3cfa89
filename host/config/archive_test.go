package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestArchiveConfig(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"rw", "ro", "outside"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	roots := "[[root]]\npath = \"rw\"\n[[root]]\npath = \"ro\"\nread_only = true\n"
	parse := func(doc string) (*Config, error) {
		return Parse(filepath.Join(dir, "capkit.toml"), []byte(roots+doc))
	}
	c, err := parse("[archive]\nroot = \"outside/arch\"\nsource_policy = \"outside/source.json\"\nbudget_root = \"outside/budget\"\ntask = \"t\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.Archive.Root != filepath.Join(dir, "outside", "arch") || c.Archive.BudgetLocator() != filepath.Join(dir, "outside", "budget") {
		t.Fatalf("%+v", c.Archive)
	}
	if c.Protected().Covers(c.Archive.Root) {
		t.Fatal("a root outside every configured root is protected")
	}
	// A root inside a configured root is protected there.
	c, err = parse("[archive]\nroot = \"rw/arch\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Protected().Covers(filepath.Join(dir, "rw", "arch")) || !c.Protected().Covers(filepath.Join(dir, "rw", "arch", "archive.db")) {
		t.Fatal("an archive root inside a writable root is not protected")
	}
	if c.Protected().Covers(filepath.Join(dir, "rw", "other")) {
		t.Fatal("the rest of the root is protected")
	}
	for doc, want := range map[string]string{
		"[archive]\nroot = \"rw\"\n":                                                                          "archive.root",
		"[archive]\nroot = \".\"\n":                                                                           "archive.root",
		"[archive]\nsource_policy = \"outside/s.json\"\n":                                                     "archive.root",
		"[archive]\nroot = \"outside/a\"\nbudget_root = \"outside/b\"\n":                                      "archive.source_policy",
		"[archive]\nroot = \"outside/a\"\nsource_policy = \"outside/s.json\"\n":                               "archive.source_policy",
		"[archive]\nroot = \"outside/a\"\nsource_policy = \"rw/s.json\"\nbudget_root = \"outside/b\"\n":       "archive.source_policy",
		"[archive]\nroot = \"outside/a\"\nsource_policy = \"outside/s.json\"\nbudget_root = \"rw/b\"\n":       "archive.budget_root",
		"[archive]\nroot = \"outside/a\"\nsource_policy = \"outside/s.json\"\nbudget_store = \"mysql://x\"\n": "archive.budget_store",
	} {
		if _, err := parse(doc); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v", doc, err)
		}
	}
}
