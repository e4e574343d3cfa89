package config

import (
	"strings"
	"testing"
	"time"
)

func TestScriptConfig(t *testing.T) {
	c, _, err := parseCatalogDoc(t, "[script]\nenabled = true\nmax_steps = 1000\ntimeout = \"5s\"\nmax_result_bytes = 4096\nmax_memory_bytes = 67108864\nallow_time = true\n")
	if err != nil {
		t.Fatal(err)
	}
	o := c.Script.Options()
	if !c.Script.Enabled || o.MaxSteps != 1000 || o.Timeout != 5*time.Second || o.MaxResultBytes != 4096 || o.MaxMemoryBytes != 64<<20 || !o.AllowTime {
		t.Fatalf("%+v %+v", c.Script, o)
	}
	c, _, err = parseCatalogDoc(t, "")
	if err != nil || c.Script.Enabled {
		t.Fatal("scripts are off by default", err)
	}
}

func TestScriptConfigErrors(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"[script]\nmax_steps = 0", "capkit.toml:2: script.max_steps: 0 is outside"},
		{"[script]\nmax_steps = 10000000001", "capkit.toml:2: script.max_steps: 10000000001 is outside 1..10000000000"},
		{"[script]\ntimeout = \"11m\"", "capkit.toml:2: script.timeout: 11m0s is outside"},
		{"[script]\ntimeout = \"soon\"", "capkit.toml:2"},
		{"[script]\nmax_result_bytes = 134217729", "capkit.toml:2: script.max_result_bytes"},
		{"[script]\nmax_memory_bytes = -1", "capkit.toml:2: script.max_memory_bytes"},
		{"[script]\nenable = true", "capkit.toml:2: script.enable: unknown key"},
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

func TestScriptProvenanceConfig(t *testing.T) {
	c, _, err := parseCatalogDoc(t, "[script]\nenabled = true\n")
	if err != nil || c.Script.Options().Provenance != nil {
		t.Fatal("provenance is off by default", err)
	}
	doc := `[script]
enabled = true
[script.provenance]
enabled = true
trusted = ["tool:notes", "root:/srv/policies"]
read_only = ["lookup"]
readers = { "tool:mail_read" = ["mail.example"] }
[script.provenance.tool.write_file]
content = "any"
path = "trusted"
[script.provenance.tool.net_fetch]
url = { readers = "url", integrity = "trusted" }
[script.provenance.tool.send]
body = { readers = "to" }
`
	c, _, err = parseCatalogDoc(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Script.Options().Provenance
	if p == nil || len(p.Trusted) != 2 || p.ReadOnly[0] != "lookup" || p.Readers["tool:mail_read"][0] != "mail.example" {
		t.Fatalf("%+v", p)
	}
	w, n, s := p.Tools["write_file"], p.Tools["net_fetch"]["url"], p.Tools["send"]["body"]
	if !w["content"].Any || w["path"].Any || n.Readers != "url" || n.Any || s.Readers != "to" || !s.Any {
		t.Fatalf("%+v", p.Tools)
	}
}

func TestScriptProvenanceConfigErrors(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"[script.provenance]\ntrusted = [\"notes\"]", "capkit.toml:2: script.provenance.trusted: source \"notes\": write KIND:NAME"},
		{"[script.provenance]\ntrusted = [\"root:rel\"]", "the root must be an absolute directory"},
		{"[script.provenance]\nreaders = { \"x:y\" = [\"h\"] }", "script.provenance.readers: source \"x:y\": unknown kind"},
		{"[script.provenance.tool.write_file]\npath = \"maybe\"", "capkit.toml:2: script.provenance.tool.write_file.path: \"maybe\""},
		{"[script.provenance.tool.write_file]\npath = { integrity = \"any\" }", "a table needs readers"},
		{"[script.provenance.tool.write_file]\npath = 1", "want \"trusted\""},
		{"[script.provenance]\nenable = true", "script.provenance.enable: unknown key"},
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
