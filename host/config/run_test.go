package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/limits"
)

func TestRunConfig(t *testing.T) {
	c, dir, err := parseCatalogDoc(t, `
[[root]]
path = "."
[run]
containment = "required"
timeout = "90s"
max_output_bytes = 1000
processes = 500
milli_cpus = 1500
env = { GOFLAGS = "-mod=mod", GOPROXY = "off" }
protect = [".envrc"]
read_only = ["/usr"]
[test]
command = ["go", "test", "./..."]
args = "-run=[A-Za-z]+"
timeout = "5m"
[test.variant.race]
command = ["go", "test", "-race", "./..."]
dir = "sub"
[build]
command = ["go", "build", "./..."]
`)
	if err != nil {
		t.Fatal(err)
	}
	o := c.RunOptions()
	if !o.RequireFull || o.Timeout != 90*time.Second || o.MaxOutputBytes != 1000 || o.Limits.Processes != 500 || o.Limits.MilliCPUs != 1500 ||
		!slices.Equal(o.Env, []string{"GOFLAGS=-mod=mod", "GOPROXY=off"}) || !slices.Equal(o.ReadOnly, []string{"/usr"}) ||
		!slices.Equal(o.Protected.Paths([]string{dir}), []string{
			filepath.Join(dir, ".git"), filepath.Join(dir, "capkit.toml"), filepath.Join(dir, ".envrc")}) {
		t.Errorf("%+v", o)
	}
	def, race := o.Test[""], o.Test["race"]
	if !slices.Equal(def.Argv, []string{"go", "test", "./..."}) || def.Timeout != 5*time.Minute ||
		!def.Args.MatchString("-run=Abc") || def.Args.MatchString("-run=Abc;x") ||
		race.Args != nil || race.Dir != "sub" || len(o.Build) != 1 {
		t.Errorf("test %+v race %+v build %+v", def, race, o.Build)
	}
	c, _, err = parseCatalogDoc(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if o := c.RunOptions(); o.RequireFull || o.Test != nil || o.Build != nil {
		t.Errorf("defaults: %+v", o)
	}
}

func TestRunConfigErrors(t *testing.T) {
	cache := t.TempDir()
	cases := []struct{ doc, want string }{
		{"[run]\ncontainment = \"strict\"", "capkit.toml:2: run.containment"},
		{fmt.Sprintf("[run]\nprocesses = %d", limits.RunMinProcesses-1), "capkit.toml:2: run.processes"},
		{fmt.Sprintf("[run]\nprocesses = %d", limits.RunHardProcesses+1), "capkit.toml:2: run.processes"},
		{fmt.Sprintf("[run]\nmax_output_bytes = %d", limits.RunMinOutputBytes-1), "capkit.toml:2: run.max_output_bytes"},
		{fmt.Sprintf("[run]\nmax_output_bytes = %d", limits.RunHardOutputBytes+1), "capkit.toml:2: run.max_output_bytes"},
		{"[run]\nmemory_bytes = 0", "capkit.toml:2: run.memory_bytes"},
		{fmt.Sprintf("[run]\nmilli_cpus = %d", limits.RunMinMilliCPUs-1), "capkit.toml:2: run.milli_cpus"},
		{fmt.Sprintf("[run]\nmilli_cpus = %d", limits.RunHardMilliCPUs+1), "capkit.toml:2: run.milli_cpus"},
		{"[run]\ntimeout = \"11m\"", "capkit.toml:2: run.timeout"},
		{"[run]\nenv = { HOME = \"/root\" }", "run.env.HOME"},
		{"[run]\nprotect = [\"../x\"]", "capkit.toml:2: run.protect"},
		{"[run]\nread_only = [\"missing-dir\"]", "run.read_only"},
		{"[[root]]\npath = \".\"\n[run]\ncache = [\".\"]", "run.cache"},
		{"[test]\nargs = \"x\"", "test.command"},
		{"[test]\ncommand = [\"go\"]\nargs = \"(\"", "test.args"},
		{"[test]\ncommand = [\"go\"]\ndir = \"../x\"", "test.dir"},
		{"[test.variant.Bad]\ncommand = [\"go\"]", "test.variant.Bad"},
		{"[build]\ncommand = []", "build"},
		{"[test]\ncomand = [\"go\"]", "unknown key"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			_, _, err := parseCatalogDoc(t, c.doc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
	// At the edges the values are accepted.
	for _, doc := range []string{
		fmt.Sprintf("[run]\nprocesses = %d\nmax_output_bytes = %d\nmilli_cpus = %d", limits.RunMinProcesses, limits.RunMinOutputBytes, limits.RunMinMilliCPUs),
		fmt.Sprintf("[run]\nprocesses = %d\nmax_output_bytes = %d\ntimeout = \"10m\"\nmilli_cpus = %d", limits.RunHardProcesses, limits.RunHardOutputBytes, limits.RunHardMilliCPUs),
		"[run]\ncache = [\"" + cache + "\"]",
	} {
		if _, _, err := parseCatalogDoc(t, doc); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
}
