// Package capability names what a session may do. An Effect is a kind of
// action (read a file, search, fetch from the network); a Capability grants a
// set of effects to one actor within a Scope (the roots or resources the
// effects apply to).
//
// The kernel checks effects: a call to a tool whose effect no held capability
// grants is denied before any handler runs. Scope is checked by the handler
// that knows what its arguments mean (a file tool checks that the path lies in
// a root the effect is granted on), through Set.Roots and Set.Covers.
package capability

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Effect is a kind of action a tool performs.
type Effect string

// The effects capkit's tools declare.
const (
	ReadFile   Effect = "read_file"
	WriteFile  Effect = "write_file"
	EditFile   Effect = "edit_file"
	MoveFile   Effect = "move_file"
	List       Effect = "list"
	Search     Effect = "search"
	RunShell   Effect = "run_shell"
	RunTest    Effect = "run_test"
	ToolSearch Effect = "tool_search"
	NetFetch   Effect = "net_fetch"
	IndexRead  Effect = "index_read"
	IndexWrite Effect = "index_write"
	// CatalogRead reads entries of a fixed-file catalog.
	CatalogRead Effect = "catalog_read"
	// RunScript runs a bounded workflow script.
	RunScript Effect = "run_script"
	// Parse turns caller-supplied bytes into a bounded document; no IO.
	Parse Effect = "parse"
	// StateWrite replaces private state or publishes a directory.
	StateWrite Effect = "state_write"
	// ArchiveRead and ArchiveWrite extract and create ZIP archives.
	ArchiveRead  Effect = "archive_read"
	ArchiveWrite Effect = "archive_write"
	// TextArchiveRead lists, searches and cites the text archive's
	// versions; TextArchiveWrite adds versions (never replacing one);
	// TextArchiveFetch fetches a public https URL under the archive's
	// source policy and budget and retains the result as a version. The
	// archive's operator commands (backup, restore, migrate, audit,
	// rebuild, cleanup) are no tools and have no effect.
	TextArchiveRead  Effect = "text_archive_read"
	TextArchiveWrite Effect = "text_archive_write"
	TextArchiveFetch Effect = "text_archive_fetch"
	// JournalRead and JournalWrite verify and append to JSON journals.
	JournalRead  Effect = "journal_read"
	JournalWrite Effect = "journal_write"
	// BudgetRead reads a network budget's accounting.
	BudgetRead Effect = "budget_read"
)

var known = []Effect{
	ReadFile, WriteFile, EditFile, MoveFile, List, Search, RunShell, RunTest, ToolSearch,
	NetFetch, IndexRead, IndexWrite, CatalogRead, RunScript, Parse, StateWrite,
	ArchiveRead, ArchiveWrite, TextArchiveRead, TextArchiveWrite, TextArchiveFetch,
	JournalRead, JournalWrite, BudgetRead,
}

// Effects lists every defined effect but the upstream ones (Upstream).
func Effects() []Effect { return slices.Clone(known) }

// UpstreamPrefix begins the effects that grant another MCP server's
// tools: "upstream:memory" grants the tools of the upstream the host
// named memory, and nothing else of it is visible without it.
const UpstreamPrefix = "upstream:"

// Upstream is the effect that grants the tools of the upstream named
// name.
func Upstream(name string) Effect { return Effect(UpstreamPrefix + name) }

// Upstream reports the upstream e grants the tools of, if it is such an
// effect with a valid name.
func (e Effect) Upstream() (string, bool) {
	name, ok := strings.CutPrefix(string(e), UpstreamPrefix)
	return name, ok && ValidUpstreamName(name)
}

// ValidUpstreamName reports whether name may name an upstream: a
// lower-case letter, then lower-case letters, digits and '-', at most 32
// bytes. No '_', so that NAME__TOOL, the name its tools have, says where
// the upstream's name ends.
func ValidUpstreamName(name string) bool {
	if len(name) == 0 || len(name) > 32 || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Valid reports whether e is a defined effect or an upstream's.
func (e Effect) Valid() bool {
	if _, ok := e.Upstream(); ok {
		return true
	}
	return slices.Contains(known, e)
}

// ReadOnly reports whether e never changes anything outside the session.
func (e Effect) ReadOnly() bool {
	switch e {
	case ReadFile, List, Search, ToolSearch, IndexRead, CatalogRead, Parse, ArchiveRead, TextArchiveRead, JournalRead, NetFetch, BudgetRead:
		return true
	}
	return false
}

// Destructive reports whether e may overwrite or remove existing data.
func (e Effect) Destructive() bool {
	switch e {
	case WriteFile, EditFile, RunShell, IndexWrite, StateWrite:
		return true
	}
	return false
}

// OpenWorld reports whether e reaches outside the host's own data.
func (e Effect) OpenWorld() bool { return e == NetFetch || e == RunShell || e == TextArchiveFetch }

// ParseEffect parses a configured effect name.
func ParseEffect(s string) (Effect, error) {
	e := Effect(s)
	if !e.Valid() {
		return "", fmt.Errorf("unknown effect %q", s)
	}
	return e, nil
}

// Scope is where a capability's effects apply. Roots are absolute, cleaned
// directory paths; Resources are opaque names (a catalog, an index) whose
// meaning belongs to the tool that checks them. An empty scope applies to
// tools that touch no root or resource (tool_search, parse).
type Scope struct {
	Roots     []string
	Resources []string
}

// Capability grants Effects to Actor within Scope.
type Capability struct {
	Actor   string
	Effects []Effect
	Scope   Scope
}

// New returns a capability, cleaning its roots. Roots must be absolute.
func New(actor string, effects []Effect, scope Scope) (Capability, error) {
	if actor == "" {
		return Capability{}, fmt.Errorf("capability: empty actor")
	}
	for _, e := range effects {
		if !e.Valid() {
			return Capability{}, fmt.Errorf("capability: unknown effect %q", e)
		}
	}
	roots := make([]string, 0, len(scope.Roots))
	for _, r := range scope.Roots {
		if !filepath.IsAbs(r) {
			return Capability{}, fmt.Errorf("capability: root %q is not absolute", r)
		}
		roots = append(roots, filepath.Clean(r))
	}
	return Capability{
		Actor:   actor,
		Effects: slices.Clone(effects),
		Scope:   Scope{Roots: roots, Resources: slices.Clone(scope.Resources)},
	}, nil
}

// Grants reports whether c grants e.
func (c Capability) Grants(e Effect) bool { return slices.Contains(c.Effects, e) }

// Set is the capabilities one session holds.
type Set []Capability

// Grants reports whether any capability in s grants e.
func (s Set) Grants(e Effect) bool {
	for _, c := range s {
		if c.Grants(e) {
			return true
		}
	}
	return false
}

// Roots returns, without duplicates and in grant order, the roots on which
// e is granted.
func (s Set) Roots(e Effect) []string {
	var out []string
	for _, c := range s {
		if !c.Grants(e) {
			continue
		}
		for _, r := range c.Scope.Roots {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// AllRoots returns every root named by any capability in s, in grant order.
func (s Set) AllRoots() []string {
	var out []string
	for _, c := range s {
		for _, r := range c.Scope.Roots {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// Covers reports whether e is granted on root (an exact root, as returned by
// Roots) or on the named resource.
func (s Set) Covers(e Effect, rootOrResource string) bool {
	for _, c := range s {
		if c.Grants(e) && (slices.Contains(c.Scope.Roots, rootOrResource) || slices.Contains(c.Scope.Resources, rootOrResource)) {
			return true
		}
	}
	return false
}

// Within reports whether the cleaned absolute path p is root itself or lies
// under it, comparing whole path elements: /x/root_evil is not within /x/root.
func Within(root, p string) bool {
	if p == root {
		return true
	}
	prefix := root
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return strings.HasPrefix(p, prefix)
}
