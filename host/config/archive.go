package config

import (
	"slices"
	"strings"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/net/budget"
)

// ArchiveConfig configures the text archive's tools (effects
// text_archive_read, text_archive_write and, with a source policy,
// text_archive_fetch).
//
//	[archive]
//	root = "/var/lib/capkit/archive"       # an archive root (capkit archive init makes one)
//	source_policy = "source-policy.json"   # optional: an approved source policy, offers archive_fetch
//	budget_root = "/var/lib/capkit/budget" # with source_policy: its group's SQLite root, or
//	budget_store = "postgres://..."        #   a PostgreSQL store shared by many hosts
//	task = "research"                      # optional stable task identity; default: the session's actor
//
// Paths are relative to the configuration file's directory. The root
// holds what the archive keeps and is the archive's alone: one inside a
// configured root (which a careful host avoids) is added to the protected
// paths, so no file tool, contained command or other tool changes it;
// the source policy and the budget root are refused inside a writable
// root, as [net]'s are (a model could rewrite its own allowance).
type ArchiveConfig struct {
	Root         string `toml:"root"`
	SourcePolicy string `toml:"source_policy"`
	BudgetRoot   string `toml:"budget_root"`
	BudgetStore  string `toml:"budget_store"`
	Task         string `toml:"task"`

	// protect are the root's paths (as spelled and resolved) when it lies
	// in a configured root.
	protect []string
}

// BudgetLocator is the budget's root directory or PostgreSQL URL, or ""
// without one.
func (a ArchiveConfig) BudgetLocator() string {
	if a.BudgetStore != "" {
		return a.BudgetStore
	}
	return a.BudgetRoot
}

// resolveArchive checks the [archive] table and makes its paths absolute.
func (c *Config) resolveArchive(errs *errorList) {
	a := &c.Archive
	if a.Root == "" {
		if a.SourcePolicy != "" || a.BudgetRoot != "" || a.BudgetStore != "" || a.Task != "" {
			errs.add(c.Errorf("archive.root", "missing: [archive] needs the archive root"))
		}
		return
	}
	abs, err := c.abs(a.Root)
	if err != nil || strings.ContainsRune(a.Root, 0) {
		errs.add(c.Errorf("archive.root", "bad path"))
		return
	}
	a.Root = abs
	real := realPaths(abs)
	for _, r := range c.Roots {
		if slices.ContainsFunc(real, func(p string) bool { return capability.Within(r.Dir, p) || capability.Within(p, r.Dir) }) {
			if slices.ContainsFunc(real, func(p string) bool { return capability.Within(p, r.Dir) }) {
				errs.add(c.Errorf("archive.root", "%s holds root %s: the archive root must be a directory of its own", abs, r.Dir))
				continue
			}
			a.protect = append(a.protect, real...)
		}
	}
	if a.SourcePolicy == "" {
		if a.BudgetRoot != "" || a.BudgetStore != "" {
			errs.add(c.Errorf("archive.source_policy", "missing: a budget is for the fetches a source policy approves"))
		}
		return
	}
	switch {
	case (a.BudgetRoot == "") == (a.BudgetStore == ""):
		errs.add(c.Errorf("archive.source_policy", "needs exactly one of budget_root or budget_store"))
	case a.BudgetStore != "" && !budget.IsPostgres(a.BudgetStore):
		errs.add(c.Errorf("archive.budget_store", "must be a postgres:// URL"))
	}
	for _, f := range []struct {
		field string
		path  *string
	}{{"archive.source_policy", &a.SourcePolicy}, {"archive.budget_root", &a.BudgetRoot}} {
		if *f.path == "" {
			continue
		}
		abs, err := c.abs(*f.path)
		if err != nil || strings.ContainsRune(*f.path, 0) {
			errs.add(c.Errorf(f.field, "bad path"))
			continue
		}
		*f.path = abs
		c.refuseWritable(errs, f.field, abs)
	}
}
