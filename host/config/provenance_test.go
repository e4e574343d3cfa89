package config

import (
	"context"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/serve/script"
)

func TestProvenanceConfig(t *testing.T) {
	c, _, err := parseCatalogDoc(t, "[script]\nenabled = true\n[tool.write_file]\nmax_calls = 3\n")
	if err != nil || c.ProvenancePolicy() != nil {
		t.Fatal("provenance is off by default", err)
	}
	doc := `[provenance]
enabled = true
trusted = ["tool:notes", "root:/srv/policies"]
sealed = ["tool:notes"]
read_only = ["lookup", "memory__read_graph"]
readers = { "tool:mail_read" = ["mail.example"] }
[tool.write_file.provenance]
content = "any"
path = "trusted"
[tool.net_fetch]
max_calls = 5
[tool.net_fetch.provenance]
url = { readers = "url", integrity = "trusted" }
[tool.send.provenance]
body = { readers = "to" }
`
	c, _, err = parseCatalogDoc(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	p := c.ProvenancePolicy()
	if p == nil || len(p.Trusted) != 2 || len(p.Sealed) != 1 || p.Sealed[0] != "tool:notes" || p.ReadOnly[1] != "memory__read_graph" || p.Readers["tool:mail_read"][0] != "mail.example" {
		t.Fatalf("%+v", p)
	}
	w, n, s := p.Tools["write_file"], p.Tools["net_fetch"]["url"], p.Tools["send"]["body"]
	if !w["content"].Any || w["path"].Any || n.Readers != "url" || n.Any || s.Readers != "to" || !s.Any {
		t.Fatalf("%+v", p.Tools)
	}
	if c.Tools["net_fetch"].MaxCalls != 5 {
		t.Fatalf("the tool's other policy: %+v", c.Tools["net_fetch"])
	}
	// No declassify key: prov.declassify is refused (no hook).
	if p.Declassify != nil {
		t.Fatal("a hook without declassify = \"ask\"")
	}
}

func TestProvenanceConfigDeclassify(t *testing.T) {
	for _, c := range []struct {
		doc  string
		hook bool
	}{
		{"[provenance]\nenabled = true\ndeclassify = \"ask\"\n", true},
		{"[provenance]\nenabled = true\ndeclassify = \"none\"\n", false},
		{"[provenance]\nenabled = true\n", false},
	} {
		cfg, _, err := parseCatalogDoc(t, c.doc)
		if err != nil {
			t.Fatal(err)
		}
		p := cfg.ProvenancePolicy()
		if (p.Declassify != nil) != c.hook {
			t.Fatalf("%q: hook %v", c.doc, p.Declassify != nil)
		}
		if !c.hook {
			continue
		}
		// "ask" with nobody to ask (no kernel.Confirm) refuses.
		ok, err := p.Declassify(context.Background(), script.Declassification{Sources: []string{"read_file(root:/r)"}})
		if ok || fault.CodeOf(err) != fault.Denied {
			t.Fatalf("nobody to ask: %v %v", ok, err)
		}
	}
}

func TestProvenanceConfigErrors(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"[provenance]\ntrusted = [\"notes\"]", "capkit.toml:2: provenance.trusted: source \"notes\": write KIND:NAME"},
		{"[provenance]\ntrusted = [\"root:rel\"]", "the root must be an absolute directory"},
		{"[provenance]\nreaders = { \"x:y\" = [\"h\"] }", "capkit.toml:2: provenance.readers.x:y: source \"x:y\": unknown kind"},
		{"[provenance]\nread_only = [\"ok\",\n \"no such\"]", "capkit.toml:3: provenance.read_only: \"no such\" is not a tool name"},
		{"[provenance]\ntrusted = [\"tool:a\"]\nsealed = [\"tool:b\"]", "capkit.toml:3: provenance.sealed: \"tool:b\" is not in provenance.trusted"},
		{"[provenance]\ndeclassify = \"always\"", "capkit.toml:2: provenance.declassify: \"always\": want \"none\""},
		{"[tool.write_file.provenance]\npath = \"maybe\"", "capkit.toml:2: tool.write_file.provenance.path: \"maybe\""},
		{"[tool.write_file]\nmax_calls = 2\nprovenance = { path = \"maybe\" }", "capkit.toml:3: tool.write_file.provenance.path"},
		{"[tool.write_file.provenance]\npath = { integrity = \"any\" }", "a table needs readers"},
		{"[tool.write_file.provenance]\npath = { readers = 1 }", "readers: want a string"},
		{"[tool.write_file.provenance]\npath = 1", "want \"trusted\""},
		{"[provenance]\nenable = true", "capkit.toml:2: provenance.enable: unknown key"},
		{"[script.provenance]\nenabled = true", "script.provenance: unknown key"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			_, _, err := parseCatalogDoc(t, c.doc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}
