package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/serve/script"
)

// ScriptConfig configures scripts: `capkit script run` and, when enabled,
// the run_script tool (effect run_script) that lets a model run a Starlark
// workflow over its other tools.
//
//	[script]
//	enabled = true                # offer run_script to actors granted run_script
//	max_steps = 10000000          # optional: Starlark steps (default 10,000,000)
//	timeout = "30s"               # optional: wall clock, tool calls included
//	max_result_bytes = 1048576    # optional: the JSON of the script's result
//	max_memory_bytes = 268435456  # optional: heap, enforced in a worker process
//	allow_time = false            # optional: grant the time module (host clock)
//
//	[script.provenance]           # optional, experimental: labels (docs/provenance.md)
//	enabled = true                # default false: scripts run without labels
//	trusted = ["root:/srv/policies", "tool:notes"]  # sources whose data is trusted
//	read_only = ["lookup"]        # tools called whatever their arguments depend on
//	readers = { "tool:mail_read" = ["mail.example"] }  # where a source's data may go
//	[script.provenance.tool.write_file]  # per-argument rules (default "trusted")
//	content = "any"
//	[script.provenance.tool.net_fetch]
//	url = { readers = "url" }     # the URL's host must be among its data's readers
//
// The run_script tool's own policy is set in [tool.run_script].
type ScriptConfig struct {
	Enabled        bool             `toml:"enabled"`
	MaxSteps       int64            `toml:"max_steps"`
	Timeout        Duration         `toml:"timeout"`
	MaxResultBytes int64            `toml:"max_result_bytes"`
	MaxMemoryBytes int64            `toml:"max_memory_bytes"`
	AllowTime      bool             `toml:"allow_time"`
	Provenance     ProvenanceConfig `toml:"provenance"`
}

// ProvenanceConfig is [script.provenance]: see script.Provenance.
type ProvenanceConfig struct {
	Enabled  bool                      `toml:"enabled"`
	Trusted  []string                  `toml:"trusted"`
	ReadOnly []string                  `toml:"read_only"`
	Readers  map[string][]string       `toml:"readers"`
	Tools    map[string]map[string]any `toml:"tool"`
}

// Options are the script bounds and, when enabled, the provenance
// policy; the caller adds the worker and printing.
func (s ScriptConfig) Options() script.Options {
	return script.Options{
		MaxSteps:       uint64(s.MaxSteps),
		Timeout:        time.Duration(s.Timeout),
		MaxResultBytes: s.MaxResultBytes,
		MaxMemoryBytes: s.MaxMemoryBytes,
		AllowTime:      s.AllowTime,
		Provenance:     s.Provenance.policy(),
	}
}

// policy is the configured provenance, nil when not enabled. Its rules
// were checked by validateScript.
func (p ProvenanceConfig) policy() *script.Provenance {
	if !p.Enabled {
		return nil
	}
	out := &script.Provenance{Trusted: p.Trusted, ReadOnly: p.ReadOnly, Readers: p.Readers}
	for tool, args := range p.Tools {
		for arg, v := range args {
			r, err := provRule(v)
			if err != nil {
				continue
			}
			if out.Tools == nil {
				out.Tools = map[string]map[string]script.Rule{}
			}
			if out.Tools[tool] == nil {
				out.Tools[tool] = map[string]script.Rule{}
			}
			out.Tools[tool][arg] = r
		}
	}
	return out
}

// provRule is one argument's rule: "trusted", "any", or a table
// { readers = "ARG", integrity = "trusted" | "any" }.
func provRule(v any) (script.Rule, error) {
	switch x := v.(type) {
	case string:
		switch x {
		case "trusted":
			return script.Rule{}, nil
		case "any":
			return script.Rule{Any: true}, nil
		}
		return script.Rule{}, fmt.Errorf("%q: write \"trusted\", \"any\" or { readers = \"ARG\" }", x)
	case map[string]any:
		var r script.Rule
		for k, e := range x {
			s, ok := e.(string)
			switch {
			case !ok:
				return r, fmt.Errorf("%s: want a string", k)
			case k == "readers" && s != "":
				r.Readers = s
			case k == "integrity" && (s == "any" || s == "trusted"):
				r.Any = s == "any"
			default:
				return r, fmt.Errorf("%s = %q: want readers = \"ARG\", integrity = \"trusted\" or \"any\"", k, s)
			}
		}
		if r.Readers == "" {
			return r, errors.New("a table needs readers = \"ARG\"")
		}
		if _, ok := x["integrity"]; !ok {
			r.Any = true // readers alone checks where data goes, not whether it is trusted
		}
		return r, nil
	}
	return script.Rule{}, fmt.Errorf("want \"trusted\", \"any\" or { readers = \"ARG\" }")
}

// validateScript checks the [script] table: every bound within 1..its hard
// limit (a key given as 0 is an error, as for tool policies).
func (c *Config) validateScript(errs *errorList) {
	s := c.Script
	check := func(key string, v, hard int64) {
		f := "script." + key
		if (v == 0 && c.has(f)) || v < 0 || v > hard {
			errs.add(c.Errorf(f, "%d is outside 1..%d (remove the key for the default)", v, hard))
		}
	}
	check("max_steps", s.MaxSteps, limits.ScriptHardSteps)
	check("max_result_bytes", s.MaxResultBytes, limits.ScriptHardResultBytes)
	check("max_memory_bytes", s.MaxMemoryBytes, limits.ScriptHardMemoryBytes)
	if d := time.Duration(s.Timeout); (d == 0 && c.has("script.timeout")) || d < 0 || d > limits.ScriptHardTimeout {
		errs.add(c.Errorf("script.timeout", "%v is outside (0, %v]", d, limits.ScriptHardTimeout))
	}
	p := s.Provenance
	for i, pat := range p.Trusted {
		if err := script.ValidatePattern(pat); err != nil {
			errs.add(c.errAt("script.provenance.trusted", i, "%s", err))
		}
	}
	for _, pat := range slices.Sorted(maps.Keys(p.Readers)) {
		if err := script.ValidatePattern(pat); err != nil {
			errs.add(c.Errorf("script.provenance.readers", "%s", err))
		}
	}
	for _, tool := range slices.Sorted(maps.Keys(p.Tools)) {
		for _, arg := range slices.Sorted(maps.Keys(p.Tools[tool])) {
			if _, err := provRule(p.Tools[tool][arg]); err != nil {
				f := "script.provenance.tool." + tool + "." + arg
				errs.add(c.Errorf(f, "%s", err))
			}
		}
	}
}
