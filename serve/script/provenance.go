package script

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/capkit/capkit/capability"
)

// Provenance configures the labels of a run and the policies that decide
// its effectful calls (see the package comment). The zero value is the
// default policy: every tool's data untrusted, and CaMeL's rule: a tool
// that only reads is called whatever its arguments depend on, any other
// is refused when an argument depends on untrusted data. Without
// provenance (Options.Provenance nil), text a tool returns (a file, a
// page, a message) can decide where a script's writes, fetches and
// commands go, and nothing refuses them.
type Provenance struct {
	// Trusted are the sources whose data is trusted, as patterns:
	// "tool:NAME" (every result of tool NAME), "root:DIR" (what file
	// tools read in DIR or below it; DIR absolute), "catalog:NAME" (the
	// entries of catalog tool NAME), "host:NAME" (net_fetch bodies from
	// host NAME; "*.NAME" for its subdomains), "upstream:NAME" (an
	// upstream's tools).
	Trusted []string
	// Sealed are Trusted patterns whose data no call a script makes can
	// change (a reviewed address book behind an upstream whose other
	// tools send mail): a call storing where they are read from is not
	// held to trusted data on their account. Naming a pattern the
	// scripts' tools can write declassifies what they write there.
	Sealed []string
	// Readers restrict who may receive a source's data: for each source
	// pattern (as in Trusted), the destinations its data may go to. A
	// source no pattern names may go anywhere.
	Readers map[string][]string
	// ReadOnly names tools whose calls are allowed whatever their
	// arguments depend on, besides those whose effect only reads: an
	// upstream tool the host knows does not change anything.
	ReadOnly []string
	// Tools are per-tool, per-argument rules that replace the default
	// (trusted) for the arguments they name.
	Tools map[string]map[string]Rule
	// Declassify is the host's hook that may make a value trusted: a
	// script asks with prov.declassify(value, reason), and the hook
	// decides (it may ask the user). nil: nothing is ever declassified.
	Declassify func(ctx context.Context, d Declassification) (bool, error)
	// Audit receives one record per decision on an effectful call and per
	// declassification: the tool, the arguments' names, the sources, the
	// outcome; never a value.
	Audit *slog.Logger
}

// Rule is what one argument of an effectful tool may depend on.
type Rule struct {
	// Any lets the argument depend on untrusted data.
	Any bool
	// Readers names the argument whose values are where this one's data
	// goes (an address, a URL's host): every source of the data must
	// have them among its readers.
	Readers string
}

// String is the rule as capkit.toml writes it.
func (r Rule) String() string {
	switch {
	case r.Readers != "" && r.Any:
		return fmt.Sprintf("{ readers = %q }", r.Readers)
	case r.Readers != "":
		return fmt.Sprintf("{ integrity = \"trusted\", readers = %q }", r.Readers)
	case r.Any:
		return `"any"`
	}
	return `"trusted"`
}

// Declassification is one prov.declassify request.
type Declassification struct {
	// Value is the JSON of the value to declassify.
	Value json.RawMessage
	// Sources name what it depends on.
	Sources []string
	// Reason is the script's reason, trusted (a literal of the script).
	Reason string
	// At is the script position of the request.
	At string
}

// defaultRules are the rules of built-in tools that differ from
// "trusted": a URL's data may go to the URL's host only.
var defaultRules = map[string]map[string]Rule{
	"net_fetch": {"url": {Readers: "url"}},
}

// rule is tool's rule for arg.
func (p *Provenance) rule(tool, arg string) Rule {
	if r, ok := p.Tools[tool][arg]; ok {
		return r
	}
	if r, ok := defaultRules[tool][arg]; ok {
		return r
	}
	return Rule{}
}

// readsOnly reports whether tool, of effect e, only reads: its calls are
// allowed whatever their arguments depend on. net_fetch sends its URL out
// and an upstream's tools may do anything, unless the host says so.
func (p *Provenance) readsOnly(tool string, e capability.Effect) bool {
	if slices.Contains(p.ReadOnly, tool) {
		return true
	}
	switch e {
	case capability.ReadFile, capability.List, capability.Search, capability.ToolSearch,
		capability.IndexRead, capability.CatalogRead, capability.Parse, capability.JournalRead,
		capability.BudgetRead:
		return true
	}
	return false
}

// ValidatePattern checks a source pattern of Trusted or Readers.
func ValidatePattern(p string) error {
	kind, name, ok := strings.Cut(p, ":")
	if !ok || name == "" {
		return fmt.Errorf("source %q: write KIND:NAME (tool:, root:, catalog:, host:, upstream:)", p)
	}
	switch kind {
	case "tool", "catalog", "host", "upstream":
		return nil
	case "root":
		if !filepath.IsAbs(name) {
			return fmt.Errorf("source %q: the root must be an absolute directory", p)
		}
		return nil
	}
	return fmt.Errorf("source %q: unknown kind %q (tool, root, catalog, host, upstream)", p, kind)
}

// resource is where a tool's result came from: kind and name.
type resource struct{ kind, name string }

func (r resource) String() string { return r.kind + ":" + r.name }

// matches reports whether pattern names tool's results from r.
func matches(pattern, tool string, r resource) bool {
	kind, name, _ := strings.Cut(pattern, ":")
	switch {
	case kind == "tool":
		return name == tool
	case kind != r.kind:
		return false
	case kind == "root":
		return within(filepath.Clean(name), r.name)
	case kind == "host":
		if rest, ok := strings.CutPrefix(name, "*."); ok {
			return strings.HasSuffix(r.name, "."+rest)
		}
		return strings.EqualFold(name, r.name)
	}
	return name == r.name
}

func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// destination is where a value named by a readers rule sends data: a
// URL's host, or the value itself.
func destination(v string) string {
	if u, err := url.Parse(v); err == nil && u.Scheme != "" && u.Host != "" {
		return strings.ToLower(u.Hostname())
	}
	return v
}
