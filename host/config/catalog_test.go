package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/files/fixedfiles"
)

// parseIn writes doc as capkit.toml in a temporary directory (with a
// notes.txt beside it) and parses it.
func parseCatalogDoc(t *testing.T, doc string) (*Config, string, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "capkit.toml")
	c, err := Parse(name, []byte(doc))
	return c, dir, err
}

func TestCatalogConfig(t *testing.T) {
	c, dir, err := parseCatalogDoc(t, `
[catalog.release_notes]
max_entries = 8
max_file_bytes = 32768
description = "Reads one release note."
[catalog.release_notes.entries]
"release.notes" = "notes.txt"
abs = "/etc/hostname"
`)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.CatalogNames(); len(got) != 1 || got[0] != "release_notes" {
		t.Fatal(got)
	}
	entries := c.CatalogEntries("release_notes")
	if len(entries) != 2 || entries[1].ID != "release.notes" || entries[1].Path != filepath.Join(dir, "notes.txt") ||
		entries[1].Field != "catalog.release_notes.entries.release.notes" || entries[0].Path != "/etc/hostname" {
		t.Fatalf("%+v", entries)
	}
	if o := c.Catalogs["release_notes"].Options(); o.MaxEntries != 8 || o.MaxFileBytes != 32768 {
		t.Fatalf("%+v", o)
	}
}

func TestCatalogConfigErrors(t *testing.T) {
	cases := []struct {
		name, doc, want string
	}{
		{"bad name", "[catalog.Bad-Name]\n[catalog.Bad-Name.entries]\na = \"notes.txt\"", "capkit.toml:1: catalog.Bad-Name: catalog names are tool names"},
		{"entries past hard", "[catalog.c]\nmax_entries = 1025\n[catalog.c.entries]\na = \"notes.txt\"", "capkit.toml:2: catalog.c.max_entries: 1025 is outside 1..1024"},
		{"zero entries limit", "[catalog.c]\nmax_entries = 0\n[catalog.c.entries]\na = \"notes.txt\"", "capkit.toml:2: catalog.c.max_entries: 0 is outside"},
		{"bytes past hard", "[catalog.c]\nmax_file_bytes = 4194305\n[catalog.c.entries]\na = \"notes.txt\"", "capkit.toml:2: catalog.c.max_file_bytes: 4194305 is outside 1..4194304"},
		{"too many entries", "[catalog.c]\nmax_entries = 1\n[catalog.c.entries]\na = \"notes.txt\"\nb = \"notes.txt\"", "capkit.toml:3: catalog.c.entries: 2 entries exceed max_entries of 1"},
		{"bad id", "[catalog.c.entries]\n\"../x\" = \"notes.txt\"", "capkit.toml:2: catalog.c.entries.../x: identifier \"../x\" must match"},
		{"empty path", "[catalog.c.entries]\na = \"\"", "capkit.toml:2: catalog.c.entries.a: empty path"},
		{"empty description", "[catalog.c]\ndescription = \" \"\n[catalog.c.entries]\na = \"notes.txt\"", "capkit.toml:2: catalog.c.description: empty"},
		{"unknown key", "[catalog.c]\nmax_entriez = 3\n[catalog.c.entries]\na = \"notes.txt\"", "capkit.toml:2: catalog.c.max_entriez: unknown key"},
		{"entry not a string", "[catalog.c.entries]\na = 3", "capkit.toml:2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := parseCatalogDoc(t, c.doc)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %q, want %q", err, c.want)
			}
		})
	}
}

func TestOpenCatalog(t *testing.T) {
	c, dir, err := parseCatalogDoc(t, "[catalog.c.entries]\n\"release.notes\" = \"notes.txt\"\n")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := c.OpenCatalog("c")
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if data, err := cat.Read("release.notes"); err != nil || string(data) != "notes\n" {
		t.Fatal(string(data), err)
	}

	// A missing file and a directory are located errors.
	if err := os.Remove(filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	_, err = c.OpenCatalog("c")
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 2 || ce.Field != "catalog.c.entries.release.notes" {
		t.Fatalf("%#v", err)
	}
	c2, _, err := parseCatalogDoc(t, "[catalog.c.entries]\nd = \".\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.OpenCatalog("c2"); err == nil {
		t.Fatal("unknown catalog opened")
	}
	_, err = c2.OpenCatalog("c")
	if !errors.Is(err, fixedfiles.ErrNotRegular) && !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("%v", err)
	}
}
