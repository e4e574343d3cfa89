package fixedfiles

import (
	"context"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// readArgs is the tool's input: one identifier.
type readArgs struct {
	ID string `json:"id" jsonschema:"opaque identifier of the entry, e.g. \"release.notes\" (not a path)"`
}

// CatalogTool is a catalog served as one tool.
type CatalogTool struct {
	// Name is the tool's name and the resource a session must be granted.
	Name    string
	Catalog *Catalog
	// Summary and Description are what the model reads; empty means a
	// generic summary and DefaultDescription.
	Summary, Description string
}

// ToolOptions configure RegisterTools. A nil *ToolOptions registers no
// tool.
type ToolOptions struct {
	Catalogs []CatalogTool
}

// RegisterTools registers each catalog of opts as its own tool.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	if opts == nil {
		return nil
	}
	for _, c := range opts.Catalogs {
		if err := registerCatalog(b, c); err != nil {
			return err
		}
	}
	return nil
}

// registerCatalog registers c.Catalog as the tool c.Name on b, with effect
// capability.CatalogRead. The tool takes one identifier ({"id": "..."})
// and returns the entry's whole text. A session may call it only if a
// capability it holds grants catalog_read on the resource named like the
// tool (capability.Scope.Resources); one granted catalog tool reads every
// entry of its catalog, so give entries that need different grants their
// own catalogs.
//
// Bounds: a read is at most the smaller of the catalog's MaxFileBytes and
// the policy's MaxOutputBytes, which is by default the larger of
// MaxFileBytes and the kernel's default (an entry is returned whole or
// not at all, and every entry was checked against MaxFileBytes when the
// catalog was built, so each is readable unless the host lowers the
// bound); the input bound is
// limits.CatalogToolInputBytes unless the host overrides the policy. The
// catalog is read-only: nothing can add an entry after Build, so nothing
// can after registration.
//
// Disclosure: whatever fails (unknown identifier, entry over the bound,
// invalid UTF-8, I/O error, closed catalog), the caller gets the same
// not_found fault with the same message, naming neither the identifier, a
// path nor an operating-system error, so failures reveal nothing about
// membership. The detail is the fault's wrapped cause, which the kernel
// writes to the host's log and never shows an untrusted session. Audit
// events carry the tool name and byte counts only (the kernel's rule). A
// successful read does reveal that its identifier exists: use unguessable
// identifiers and tight call budgets when that matters.
func registerCatalog(b *kernel.Builder, c CatalogTool) error {
	cat := c.Catalog
	if cat == nil {
		return fmt.Errorf("fixedfiles: tool %q: nil catalog", c.Name)
	}
	policy := kernel.Policy{Name: c.Name, MaxInputBytes: limits.CatalogToolInputBytes, MaxOutputBytes: max(cat.opts.MaxFileBytes, limits.DefaultMaxOutputBytes)}
	meta := kernel.Meta{Effect: capability.CatalogRead, Title: "Read catalog " + c.Name, Summary: c.Summary, Description: c.Description}
	if meta.Description == "" {
		meta.Description = DefaultDescription(cat.opts.MaxFileBytes)
	}
	in, err := jsonschema.For[readArgs](nil)
	if err != nil {
		return fmt.Errorf("fixedfiles: tool %q: input schema: %w", policy.Name, err)
	}
	id := in.Properties["id"]
	id.Pattern = IDPattern
	id.MinLength = jsonschema.Ptr(1)
	id.MaxLength = jsonschema.Ptr(limits.CatalogIDMaxBytes)

	name := policy.Name
	// One failure for every caller-visible outcome but success: the
	// message is fixed and the cause stays for the host's log.
	unavailable := func(cause error) error {
		return fault.Wrap(fault.NotFound, cause, "catalog %s: no readable entry with that identifier", name)
	}
	return b.Register(policy, meta, in, nil, func(ctx context.Context, call *kernel.Call) (*kernel.Result, error) {
		if !call.Session.Capabilities().Covers(capability.CatalogRead, name) {
			return nil, fault.New(fault.Denied, "catalog %s is not granted to this session", name)
		}
		var args readArgs
		if err := jsonv2.Unmarshal(call.Args, &args, jsonv2.RejectUnknownMembers(true)); err != nil {
			return nil, fault.New(fault.InvalidInput, "tool %s: %s", name, err.Error())
		}
		data, err := cat.read(args.ID, min(cat.opts.MaxFileBytes, call.MaxOutputBytes))
		if err != nil {
			return nil, unavailable(err)
		}
		return &kernel.Result{Text: string(data)}, nil
	})
}

// DefaultDescription is the description a catalog tool gets when its
// metadata has none: what it does, its bound and an example call.
func DefaultDescription(maxBytes int64) string {
	return fmt.Sprintf("Reads one reviewed text file by its opaque identifier (a label the host gave you, not a path) "+
		"and returns its whole UTF-8 content. Entries are at most %s; an unknown identifier and an unreadable "+
		"entry fail alike, and nothing is ever cut short. Example: {\"id\": \"release.notes\"}", limits.Bytes(maxBytes))
}
