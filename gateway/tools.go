package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/catalog"
)

// ToolOptions configure RegisterTools.
type ToolOptions struct {
	// Gateway holds the upstreams and their approved tools; nil
	// registers nothing.
	Gateway *Gateway
}

// RegisterTools registers every approved upstream tool as NAME__TOOL:
// deferred (found through tool_search), granted by
// capability.Upstream(NAME), described by its approved definition (its
// text marked as the upstream's: catalog.Entry.Origin), offered to a
// session while the upstream serving it lists that same definition
// (kernel.Meta.Offered), and called through the kernel like any tool:
// its policy is the kernel's default unless [tool."NAME__TOOL"] sets one
// (kernel.Options.PolicyOverride).
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	if opts == nil || opts.Gateway == nil {
		return nil
	}
	g := opts.Gateway
	for _, t := range g.Tools() {
		in, out, err := schemasOf(t.Definition)
		if err != nil {
			return fmt.Errorf("gateway: tool %s: the approved schemas cannot be read: %w", t.Public, err)
		}
		if err := b.Register(kernel.Policy{Name: t.Public}, meta(g, t), in, out, handler(g, t)); err != nil {
			return err
		}
	}
	return nil
}

// meta describes t to the catalog with its approved definition.
func meta(g *Gateway, t *Tool) kernel.Meta {
	d := t.Definition
	a := d.Annotations
	title := d.Title
	if title == "" {
		title = a.Title
	}
	desc := d.Description
	if desc == "" {
		desc = "Tool " + d.Name + " of upstream " + t.Upstream + " (it has no description)."
	}
	return kernel.Meta{
		Effect:      capability.Upstream(t.Upstream),
		Origin:      "upstream " + t.Upstream,
		Title:       title,
		Summary:     t.Summary(),
		Description: desc,
		Annotations: &catalog.Annotations{Title: title, ReadOnly: a.ReadOnly, Destructive: a.Destructive, Idempotent: a.Idempotent, OpenWorld: a.OpenWorld},
		Offered: func(ctx context.Context, s *kernel.Session) error {
			return g.Offered(ctx, attach(g, s), t)
		},
	}
}

// handler calls t for the session's share of the upstream.
func handler(g *Gateway, t *Tool) kernel.Handler {
	return func(ctx context.Context, call *kernel.Call) (*kernel.Result, error) {
		out, err := g.Call(ctx, attach(g, call.Session), t, call.Args, call.MaxOutputBytes, kernel.ProgressOf(ctx))
		if err != nil {
			return nil, err
		}
		return &kernel.Result{Text: out.Text, Structured: out.Structured, Content: out.Content}, nil
	}
}

type attachKey struct{}

// attach is s's key, and, the first time, makes s watch its upstreams
// (so its front door lists again when what is offered changes) until it
// closes, when the processes started for it alone stop.
func attach(g *Gateway, s *kernel.Session) Key {
	k := Key{Actor: s.Actor(), Session: s.ID()}
	once := s.Local(attachKey{}, func() any { return new(sync.Once) }).(*sync.Once)
	once.Do(func() {
		cancel := g.Watch(k, s.ToolsChanged)
		s.OnClose(func() {
			cancel()
			g.Release(k)
		})
	})
	return k
}

// schemasOf are the approved schemas as the catalog takes them.
func schemasOf(d *Definition) (in, out *jsonschema.Schema, err error) {
	in = new(jsonschema.Schema)
	if err := json.Unmarshal(d.InputSchema, in); err != nil {
		return nil, nil, err
	}
	if d.OutputSchema != nil {
		out = new(jsonschema.Schema)
		if err := json.Unmarshal(d.OutputSchema, out); err != nil {
			return nil, nil, err
		}
	}
	return in, out, nil
}
