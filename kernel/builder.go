package kernel

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel/catalog"
)

// ErrBuilt is returned when a Builder is used after Build.
var ErrBuilt = fault.NewMark("kernel: builder already built; nothing registers after Build")

// Meta describes a tool to the catalog.
type Meta struct {
	Effect capability.Effect
	// Hot tools are listed without discovery.
	Hot bool
	// Title is the human-readable name clients show ("Read file").
	Title string
	// Summary is the one-line discovery text.
	Summary string
	// Description is what the model reads: what the tool does, its limits
	// and an example.
	Description string
	// Annotations override the hints derived from Effect.
	Annotations *catalog.Annotations
	// Origin names who defines the tool besides capkit (catalog.Entry's
	// Origin: "upstream memory"); its name may then use the wider set
	// such tools have.
	Origin string
	// Offered, when set, says whether the tool is offered to session s
	// now: a non-nil error withdraws it from the session's list and from
	// tool_search (and says why, for whoever asks). The catalog stays
	// frozen; what changes is whether an entry is shown. It must return
	// promptly once ctx is done: listings pass a context already done
	// (answer from what is known, without waiting), tool_search its call's
	// (it may wait, so a search sees a source still starting). It does
	// not refuse calls: the handler does, under the call's deadline, with
	// the kernel's checks and audit around it. A change of its answer is
	// announced with Session.ToolsChanged.
	Offered func(ctx context.Context, s *Session) error
}

// Handler runs one admitted call. It returns a result or an error; errors
// that are not a *fault.Error are internal failures.
type Handler func(ctx context.Context, call *Call) (*Result, error)

// Options configure a Builder. The zero value is usable.
type Options struct {
	// Audit receives one event per call: actor, tool, outcome, input and
	// output bytes, duration. Nil disables auditing.
	Audit *slog.Logger
	// Log is the host's trusted log: failure detail that untrusted callers
	// never see. Nil discards it.
	Log *slog.Logger
	// DisableToolSearch leaves out the built-in tool_search tool. Without
	// it, deferred tools can never be discovered, so sessions list every
	// tool they are granted.
	DisableToolSearch bool
	// PolicyOverride, when set, receives every policy as a package
	// registers it and returns the policy to use instead: the host's
	// per-tool configuration applies to tools whose packages it does not
	// control. The returned policy is checked like any other (hard limits)
	// and must keep the name.
	PolicyOverride func(Policy) Policy
	// ToolIndex, when set, ranks tool_search's candidates in a catalog of
	// more than limits.ToolSearchIndexMinEntries tools (hundreds of other
	// servers' tools, say), where the catalog's own word matching ranks
	// poorly. It is made once, on the first such search, from every
	// entry; a failure to make it or to rank fails that search.
	ToolIndex func(entries []*catalog.Entry) (ToolIndex, error)
	// CheckOutput validates every successful result's structured content
	// against its tool's output schema, as clients such as the MCP
	// TypeScript SDK's do, and fails a call whose result does not match
	// with internal. It decodes every result once more, so it is meant
	// for tests; a result that does not match is a tool's defect.
	CheckOutput bool
}

type tool struct {
	policy  Policy
	handler Handler
	offered func(context.Context, *Session) error
	// running counts the calls admitted whose handler has not returned.
	running *atomic.Int32
}

// Builder collects tools. It is not safe for concurrent use.
type Builder struct {
	opts    Options
	entries []catalog.Entry
	tools   []tool
	names   map[string]bool
	built   bool
}

// NewBuilder returns a Builder. opts may be nil.
func NewBuilder(opts *Options) *Builder {
	b := &Builder{names: map[string]bool{}}
	if opts != nil {
		b.opts = *opts
	}
	return b
}

// Register adds a tool whose arguments must satisfy input, an object schema.
// It fails for a duplicate name, an invalid policy or entry, or after Build.
// Whether the schemas resolve is checked when the tool is first listed or
// called (see catalog.Entry.Validate).
func (b *Builder) Register(policy Policy, meta Meta, input, output *jsonschema.Schema, h Handler) error {
	return b.register(policy, meta, catalog.Entry{InputSchema: input, OutputSchema: output}, h)
}

// register adds a tool described by meta and e's schemas (or its Infer).
func (b *Builder) register(policy Policy, meta Meta, e catalog.Entry, h Handler) error {
	if b.built {
		return ErrBuilt
	}
	if h == nil {
		return fmt.Errorf("kernel: tool %q: nil handler", policy.Name)
	}
	if b.names[policy.Name] {
		return fmt.Errorf("kernel: duplicate tool name %q", policy.Name)
	}
	if b.opts.PolicyOverride != nil {
		name := policy.Name
		if policy = b.opts.PolicyOverride(policy); policy.Name != name {
			return fmt.Errorf("kernel: tool %q: policy override renamed it to %q", name, policy.Name)
		}
	}
	p, err := policy.withDefaults()
	if err != nil {
		return err
	}
	e.Name, e.Effect, e.Hot = p.Name, meta.Effect, meta.Hot
	e.Summary, e.Description, e.Annotations, e.Origin = meta.Summary, meta.Description, meta.Annotations, meta.Origin
	if meta.Title != "" {
		a := e.Hints()
		a.Title = meta.Title
		e.Annotations = &a
	}
	if err := e.Validate(); err != nil {
		return err
	}
	b.names[p.Name] = true
	b.entries = append(b.entries, e)
	b.tools = append(b.tools, tool{policy: p, handler: h, offered: meta.Offered, running: new(atomic.Int32)})
	return nil
}

// Build freezes the registered tools into a Runtime. The Builder cannot be
// used afterwards.
func (b *Builder) Build() (*Runtime, error) {
	if b.built {
		return nil, ErrBuilt
	}
	if !b.opts.DisableToolSearch && !b.names[catalog.ToolSearchName] {
		if err := registerToolSearch(b); err != nil {
			return nil, err
		}
	}
	b.built = true
	cat, err := catalog.New(b.entries)
	if err != nil {
		return nil, err
	}
	log := b.opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	rt := &Runtime{
		catalog:     cat,
		tools:       b.tools,
		audit:       b.opts.Audit,
		log:         log,
		toolSearch:  !b.opts.DisableToolSearch,
		checkOutput: b.opts.CheckOutput,
		workers:     newWorkers(),
		newIndex:    b.opts.ToolIndex,
	}
	for _, t := range b.tools {
		if t.offered != nil {
			if rt.offered == nil {
				rt.offered = map[string]func(context.Context, *Session) error{}
			}
			rt.offered[t.policy.Name] = t.offered
		}
	}
	if rt.newIndex != nil {
		rt.index = sync.OnceValues(func() (ToolIndex, error) { return rt.newIndex(cat.Entries()) })
	}
	b.entries, b.tools = nil, nil
	return rt, nil
}
