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
	c.resolvePolicyPaths(errs, "net.http_policy", &n.HTTPPolicy, budgetKeys{
		"net.budget_policy", "net.budget_root", "net.budget_store", &n.BudgetPolicy, &n.BudgetRoot, &n.BudgetStore,
	})
}

// budgetKeys are a table's budget fields: names, then values.
type budgetKeys struct {
	policyField, rootField, storeField string
	policy, root, store                *string
}

// resolvePolicyPaths checks an HTTP policy and its budget (a policy and
// exactly one of a root or a PostgreSQL store) and makes their paths
// absolute, refusing any a model could rewrite through a writable root.
func (c *Config) resolvePolicyPaths(errs *errorList, policyField string, policy *string, b budgetKeys) {
	hasStore := *b.root != "" || *b.store != ""
	switch {
	case *b.policy != "" && *b.root != "" == (*b.store != ""):
		errs.add(c.Errorf(b.policyField, "needs exactly one of %s or %s", lastKey(b.rootField), lastKey(b.storeField)))
	case *b.policy == "" && hasStore:
		errs.add(c.Errorf(b.policyField, "missing: %s and %s need a budget policy", lastKey(b.rootField), lastKey(b.storeField)))
	case *b.store != "" && !budget.IsPostgres(*b.store):
		errs.add(c.Errorf(b.storeField, "must be a postgres:// URL"))
	}
	for _, f := range []struct {
		field string
		path  *string
	}{{policyField, policy}, {b.policyField, b.policy}, {b.rootField, b.root}} {
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

// lastKey is a dotted field's own name.
func lastKey(field string) string { return field[strings.LastIndexByte(field, '.')+1:] }

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
