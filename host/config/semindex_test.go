package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestSemindexConfig(t *testing.T) {
	pin := strings.Repeat("AB", 32)
	c, _, err := parseCatalogDoc(t, "[semindex]\nmodel = \"models/minilm\"\npin = \""+pin+"\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(c.Semindex.Model) || !strings.HasSuffix(c.Semindex.Model, "models/minilm") || c.Semindex.Pin != strings.ToLower(pin) {
		t.Fatalf("%+v", c.Semindex)
	}
	for _, doc := range []string{"[semindex]\npin = \"abc\"", "[semindex]\npin = \"" + strings.Repeat("g", 64) + "\""} {
		if _, _, err := parseCatalogDoc(t, doc); err == nil || !strings.Contains(err.Error(), "capkit.toml:2: semindex.pin") {
			t.Errorf("%q: %v", doc, err)
		}
	}
}
