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
