package config

import (
	"strings"

	"github.com/capkit/capkit/internal/clip"

	"github.com/capkit/capkit/files/fixedfiles"
	"github.com/capkit/capkit/limits"
)

// CatalogConfig configures one fixed-file catalog, served as a tool named
// like its table ([catalog.release_notes] is the tool release_notes, with
// effect catalog_read). A session may call it when its actor is granted
// catalog_read and lists the catalog in its resources. Its policy (calls,
// output bytes, timeout) is set like any tool's, in [tool.NAME].
//
//	[catalog.release_notes]
//	max_entries = 8                 # optional: default 64, at most 1024
//	max_file_bytes = 32768          # optional: default 65536, at most 4 MiB
//	description = "Reads one release note by id: release.notes, changelog."  # optional: what the model reads
//	[catalog.release_notes.entries]
//	"release.notes" = "docs/release-notes.txt"   # id = path (relative to this file)
//	changelog = "/srv/app/CHANGELOG.md"
//
// Identifiers match fixedfiles.IDPattern; they are labels, never paths.
// The files are opened once, when the tool is set up; replacing a file at
// its path afterwards does not change what is read (editing it in place
// does).
type CatalogConfig struct {
	MaxEntries   int    `toml:"max_entries"`
	MaxFileBytes int64  `toml:"max_file_bytes"`
	Summary      string `toml:"summary"`
	Description  string `toml:"description"`
	// Entries maps identifier to path. Paths are absolute once the
	// configuration is read.
	Entries map[string]string `toml:"entries"`
}

// CatalogEntry is one configured catalog entry.
type CatalogEntry struct {
	ID string
	// Path is absolute.
	Path string
	// Field names the entry in messages: catalog.NAME.entries.ID.
	Field string
}

// Options are the catalog's limits for fixedfiles.NewBuilder.
func (cc CatalogConfig) Options() *fixedfiles.Options {
	return &fixedfiles.Options{MaxEntries: cc.MaxEntries, MaxFileBytes: cc.MaxFileBytes}
}

// CatalogNames lists the configured catalogs in name order.
func (c *Config) CatalogNames() []string { return sortedKeys(c.Catalogs) }

// CatalogEntries lists the entries of catalog name in identifier order.
func (c *Config) CatalogEntries(name string) []CatalogEntry {
	cc := c.Catalogs[name]
	var out []CatalogEntry
	for _, id := range sortedKeys(cc.Entries) {
		out = append(out, CatalogEntry{ID: id, Path: cc.Entries[id], Field: "catalog." + name + ".entries." + id})
	}
	return out
}

// OpenCatalog opens every entry of catalog name and builds the catalog.
// A file that cannot be added (missing, not a regular file, over
// max_file_bytes) is an *Error naming the entry's line; the files already
// opened are closed.
func (c *Config) OpenCatalog(name string) (*fixedfiles.Catalog, error) {
	cc, ok := c.Catalogs[name]
	if !ok {
		return nil, c.Errorf("catalog", "no catalog %q is configured", name)
	}
	b, err := fixedfiles.NewBuilder(cc.Options())
	if err != nil {
		return nil, c.Errorf("catalog."+name, "%s", err)
	}
	for _, e := range c.CatalogEntries(name) {
		if err := b.InsertPath(e.ID, e.Path); err != nil {
			b.Close()
			return nil, c.Errorf(e.Field, "%s", err)
		}
	}
	return b.Build()
}

// validateCatalogs checks the [catalog.NAME] tables and makes entry paths
// absolute: a catalog becomes a tool, so its name must be a valid tool
// name; limits lie within the hard limits; identifiers match the pattern
// and fit max_entries. A catalog without entries is allowed (its tool
// fails every call); capkit catalog check reports it.
func (c *Config) validateCatalogs(errs *errorList) {
	for _, name := range sortedKeys(c.Catalogs) {
		cc := c.Catalogs[name]
		field := "catalog." + name
		if !toolNamePattern.MatchString(name) {
			errs.add(c.Errorf(field, "catalog names are tool names and must match %s", toolNamePattern))
		}
		if v := cc.MaxEntries; (v == 0 && c.has(field+".max_entries")) || v < 0 || v > limits.CatalogHardEntries {
			errs.add(c.Errorf(field+".max_entries", "%d is outside 1..%d (remove the key for the default of %d)", v, limits.CatalogHardEntries, limits.CatalogDefaultEntries))
		}
		if v := cc.MaxFileBytes; (v == 0 && c.has(field+".max_file_bytes")) || v < 0 || v > limits.CatalogHardFileBytes {
			errs.add(c.Errorf(field+".max_file_bytes", "%d is outside 1..%d (remove the key for the default of %d)", v, limits.CatalogHardFileBytes, limits.CatalogDefaultFileBytes))
		}
		if c.has(field+".description") && strings.TrimSpace(cc.Description) == "" {
			errs.add(c.Errorf(field+".description", "empty; remove the key for the default description"))
		}
		maxEntries := cc.MaxEntries
		if maxEntries <= 0 {
			maxEntries = limits.CatalogDefaultEntries
		}
		if n := len(cc.Entries); n > maxEntries {
			errs.add(c.Errorf(field+".entries", "%d entries exceed max_entries of %d", n, maxEntries))
		}
		ids := sortedKeys(cc.Entries)
		for _, id := range ids {
			ef := field + ".entries." + id
			p := cc.Entries[id]
			if !fixedfiles.ValidID(id) {
				errs.add(c.Errorf(ef, "identifier %q must match %s (lower-case letters, digits, '_', '-', '.'; not a path)", clip.Text(id), fixedfiles.IDPattern))
			}
			switch {
			case p == "":
				errs.add(c.Errorf(ef, "empty path"))
				continue
			case strings.ContainsRune(p, 0):
				errs.add(c.Errorf(ef, "path contains a NUL byte"))
				continue
			}
			abs, err := c.abs(p)
			if err != nil {
				errs.add(c.Errorf(ef, "%s", err))
				continue
			}
			cc.Entries[id] = abs
		}
	}
}
