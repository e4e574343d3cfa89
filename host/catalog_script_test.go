package host

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/host/config"
	"github.com/capkit/capkit/serve/script"
)

func TestCatalogsAndScript(t *testing.T) {
	dir := fixture(t)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("reviewed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := load(t, dir, base+`[actor.assistant]
effects = ["read_file", "catalog_read", "run_script"]
resources = ["notes"]
[catalog.notes]
description = "Reads one reviewed note by id."
[catalog.notes.entries]
"release.notes" = "notes.txt"
[tool.notes]
max_calls = 2
[script]
enabled = true
max_steps = 1000
`)
	h, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if p, ok := h.Runtime.Policy("notes"); !ok || p.MaxCalls != 2 {
		t.Fatalf("catalog tool policy %+v %v", p, ok)
	}
	if _, ok := h.Runtime.Policy(script.ToolName); !ok {
		t.Fatal("run_script not registered")
	}
	s, err := h.NewSession("assistant", false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := call(t, s, "notes", `{"id":"release.notes"}`)
	if err != nil || res.Text != "reviewed\n" {
		t.Fatal(res, err)
	}
	if _, err := call(t, s, "notes", `{"id":"other"}`); fault.CodeOf(err) != fault.NotFound || strings.Contains(err.Error(), dir) {
		t.Fatal(err)
	}
}

func TestCatalogEntryMissingAtSetup(t *testing.T) {
	dir := fixture(t)
	cfg := load(t, dir, base+"[catalog.notes.entries]\ngone = \"missing.txt\"\n")
	_, err := New(cfg, nil)
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Field != "catalog.notes.entries.gone" || ce.Line == 0 {
		t.Fatalf("%#v", err)
	}
}

func TestScriptDisabledByDefault(t *testing.T) {
	h, err := New(load(t, fixture(t), base), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, ok := h.Runtime.Policy(script.ToolName); ok {
		t.Fatal("run_script registered without [script] enabled")
	}
}
