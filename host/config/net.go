package config

import (
	"slices"
	"strings"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/net/budget"
)

// NetConfig configures net_fetch (effect net_fetch) and, with a budget,
// budget_status (effect budget_read).
//
//	[net]
//	http_policy = "http-policy.json"       # a reviewed HttpPolicy (format 1): offers net_fetch
//	budget_policy = "budget-policy.json"   # optional BudgetPolicy: each request admitted durably first
//	budget_root = "/var/lib/capkit/budget" # with budget_policy: the allowance's SQLite root, or
//	budget_store = "postgres://..."        #   a PostgreSQL store shared by many hosts
//	task = "nightly-digest"                # optional stable task identity; default: the session's actor
//
// Paths are relative to the configuration file's directory. A policy file
// or budget root inside a writable root is refused: a model could rewrite
// its own allowance or exceptions. (The policy's ca_file is not checked
// here: keep it beside the policy.)
type NetConfig struct {
	HTTPPolicy   string `toml:"http_policy"`
	BudgetPolicy string `toml:"budget_policy"`
	BudgetRoot   string `toml:"budget_root"`
	BudgetStore  string `toml:"budget_store"`
	Task         string `toml:"task"`
}

// BudgetLocator is the budget's root directory or PostgreSQL URL, or ""
// without a budget.
func (n NetConfig) BudgetLocator() string {
	if n.BudgetStore != "" {
		return n.BudgetStore
	}
	return n.BudgetRoot
}

// resolveNet checks the [net] table and makes its paths absolute.
func (c *Config) resolveNet(errs *errorList) {
	n := &c.Net
	if *n == (NetConfig{}) {
		return
	}
	if n.HTTPPolicy == "" {
		errs.add(c.Errorf("net.http_policy", "missing: [net] needs a reviewed HTTP policy file"))
	}
	hasBudget := n.BudgetRoot != "" || n.BudgetStore != ""
	switch {
	case n.BudgetPolicy != "" && n.BudgetRoot != "" == (n.BudgetStore != ""):
		errs.add(c.Errorf("net.budget_policy", "needs exactly one of budget_root or budget_store"))
	case n.BudgetPolicy == "" && hasBudget:
		errs.add(c.Errorf("net.budget_policy", "missing: budget_root and budget_store need a budget policy"))
	case n.BudgetStore != "" && !budget.IsPostgres(n.BudgetStore):
		errs.add(c.Errorf("net.budget_store", "must be a postgres:// URL"))
	}
	for _, f := range []struct {
		field string
		path  *string
	}{{"net.http_policy", &n.HTTPPolicy}, {"net.budget_policy", &n.BudgetPolicy}, {"net.budget_root", &n.BudgetRoot}} {
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

// refuseWritable refuses a path a model could write through a writable
// root (by any of its realPaths).
func (c *Config) refuseWritable(errs *errorList, field, abs string) {
	real := realPaths(abs)
	for _, r := range c.Roots {
		if !r.ReadOnly && slices.ContainsFunc(real, func(p string) bool { return capability.Within(r.Dir, p) }) {
			errs.add(c.Errorf(field, "%s lies inside writable root %s: a model could rewrite it", abs, r.Dir))
		}
	}
}
