package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/capkit/capkit/internal/toolname"
	"github.com/capkit/capkit/serve/script"
)

// ProvenanceConfig is [provenance]: labels on the values of scripts
// (run_script, capkit script run) and the policies that decide their
// effectful calls (docs/provenance.md). Experimental and off unless
// enabled.
//
//	[provenance]
//	enabled = true                # default false: scripts run without labels
//	trusted = ["root:/srv/policies", "tool:notes", "upstream:docs"]  # sources whose data is trusted
//	sealed = ["tool:notes"]       # trusted sources no call of a script changes (a write there is not held to trusted data)
//	read_only = ["lookup", "memory__read_graph"]  # tools (upstream ones too) called whatever their arguments depend on
//	readers = { "tool:mail_read" = ["mail.example"] }  # where a source's data may go
//	declassify = "ask"            # prov.declassify asks the MCP client's user (elicitation); default "none"
//
// Per-argument rules go in the tool's own table (the default is
// "trusted"):
//
//	[tool.write_file.provenance]
//	path = "trusted"
//	content = "any"
//	[tool.net_fetch.provenance]
//	url = { readers = "url" }     # the URL's host must be among its data's readers
type ProvenanceConfig struct {
	Enabled    bool                `toml:"enabled"`
	Trusted    []string            `toml:"trusted"`
	Sealed     []string            `toml:"sealed"`
	ReadOnly   []string            `toml:"read_only"`
	Readers    map[string][]string `toml:"readers"`
	Declassify string              `toml:"declassify"`
}

// The values of ProvenanceConfig.Declassify.
const (
	// DeclassifyNone refuses every prov.declassify (the default, also "").
	DeclassifyNone = "none"
	// DeclassifyAsk asks the person behind the caller: an MCP client's
	// user through elicitation; refused when the client cannot ask.
	DeclassifyAsk = "ask"
)

// ProvenancePolicy is the configured provenance policy, nil when
// [provenance] is not enabled. The caller adds the audit logger.
func (c *Config) ProvenancePolicy() *script.Provenance {
	p := c.Provenance
	if !p.Enabled {
		return nil
	}
	out := &script.Provenance{Trusted: p.Trusted, Sealed: p.Sealed, ReadOnly: p.ReadOnly, Readers: p.Readers}
	if p.Declassify == DeclassifyAsk {
		out.Declassify = script.AskUser
	}
	for _, tool := range sortedKeys(c.Tools) {
		for arg, v := range c.Tools[tool].Provenance {
			r, err := provRule(v) // checked by validateProvenance
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
		for _, k := range slices.Sorted(maps.Keys(x)) {
			s, ok := x[k].(string)
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

// validateProvenance checks [provenance] and the provenance tables of
// [tool.NAME].
func (c *Config) validateProvenance(errs *errorList) {
	p := c.Provenance
	for i, pat := range p.Trusted {
		if err := script.ValidatePattern(pat); err != nil {
			errs.add(c.errAt("provenance.trusted", i, "%s", err))
		}
	}
	for i, pat := range p.Sealed {
		if !slices.Contains(p.Trusted, pat) {
			errs.add(c.errAt("provenance.sealed", i, "%q is not in provenance.trusted: seal a trusted source, written as trusted writes it", pat))
		}
	}
	for _, pat := range slices.Sorted(maps.Keys(p.Readers)) {
		if err := script.ValidatePattern(pat); err != nil {
			errs.add(c.Errorf("provenance.readers."+pat, "%s", err))
		}
	}
	for i, tool := range p.ReadOnly {
		if !toolNamePattern.MatchString(tool) && !toolname.ValidExternal(tool) {
			errs.add(c.errAt("provenance.read_only", i, "%q is not a tool name (write the name as tools/list gives it: read_file, memory__read_graph)", tool))
		}
	}
	switch p.Declassify {
	case "", DeclassifyNone, DeclassifyAsk:
	default:
		errs.add(c.Errorf("provenance.declassify", "%q: want %q (refuse every declassification) or %q (ask the MCP client's user)", p.Declassify, DeclassifyNone, DeclassifyAsk))
	}
	for _, tool := range sortedKeys(c.Tools) {
		args := c.Tools[tool].Provenance
		for _, arg := range slices.Sorted(maps.Keys(args)) {
			if _, err := provRule(args[arg]); err != nil {
				errs.add(c.Errorf("tool."+tool+".provenance."+arg, "%s", err))
			}
		}
	}
}
