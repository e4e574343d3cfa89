// Package hostloop is the front door for hosts that run their own agent
// loop against a model's API (Anthropic Messages, OpenAI Chat Completions
// or Responses, Gemini) instead of MCP: it gives a kernel session's tools
// in that provider's tool-definition shape, and runs the provider's tool
// calls through kernel.Session.Call, answering in the provider's
// tool-result shape.
//
// The tool list is the session's (kernel.Session.Specs: the hot tools and
// those tool_search activated, among the tools its capabilities grant), so
// a capability set yields the same names, descriptions and order whichever
// provider serves the turn; only the shape differs. Strict mode asks the
// providers that have one (OpenAI's strict function calling, Anthropic's
// strict tool use) to constrain the model's arguments to a schema in their
// strict subset (strict.go); where a tool's schema cannot be expressed
// there it is sent non-strict, and Spec.NotStrict says why. Either way the
// kernel validates every call against the tool's own schema, so strict mode
// is a way to fewer refused calls, never the check itself.
//
// The shapes are written by hand from the providers' documented JSON: the
// providers' Go SDKs are large modules with their own clients, and capkit
// needs a few structs of each, not their transports.
package hostloop

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/limits"
)

// Format is a provider's tool shape.
type Format string

// The formats. OpenAI is the Chat Completions API's shape; OpenAIResponses
// the Responses API's.
const (
	MCP             Format = "mcp"
	Anthropic       Format = "anthropic"
	OpenAI          Format = "openai"
	OpenAIResponses Format = "openai-responses"
	Gemini          Format = "gemini"
)

// Formats are every format, in the order help text lists them.
func Formats() []Format { return []Format{MCP, Anthropic, OpenAI, OpenAIResponses, Gemini} }

// ParseFormat returns the format named s.
func ParseFormat(s string) (Format, error) {
	if f := Format(s); slices.Contains(Formats(), f) {
		return f, nil
	}
	names := make([]string, 0, len(Formats()))
	for _, f := range Formats() {
		names = append(names, string(f))
	}
	return "", fault.New(fault.InvalidInput, "unknown format %q: one of %s", s, strings.Join(names, ", "))
}

// hasStrict reports whether f has a per-tool strict mode.
func (f Format) hasStrict() bool { return f == Anthropic || f == OpenAI || f == OpenAIResponses }

// Options configure a Loop. The zero value offers the session's tools
// without strict mode.
type Options struct {
	// Strict asks the provider to enforce each tool's arguments against a
	// strict form of its schema, where the format has a strict mode and
	// the schema can be expressed in it (Spec.NotStrict says where not).
	Strict bool
	// StrictTools, when not empty, limits Strict to the tools it names
	// (Anthropic's documentation advises marking only the critical tools
	// strict: its strict schemas share one budget per request).
	StrictTools []string
	// AllGranted offers every tool the session is granted and is offered
	// now (kernel.Session.GrantedWithin), not only the hot ones and those
	// tool_search activated.
	AllGranted bool
}

// Spec is one tool in a format.
type Spec struct {
	Name string `json:"name"`
	// Definition is the tool as the provider's API takes it in its list
	// of tools.
	Definition json.RawMessage `json:"definition"`
	// Strict reports that Definition asks the provider to enforce its
	// schema.
	Strict bool `json:"strict"`
	// NotStrict says why a tool is not strict when strict mode was asked
	// for.
	NotStrict string `json:"not_strict,omitempty"`
	// Changes are how the schema sent means less than the tool's own
	// (keywords the format lacks, moved into descriptions) or more (an
	// open object closed); the kernel validates the tool's own schema on
	// every call.
	Changes []Change `json:"changes,omitempty"`
}

// Change is one difference between a schema sent to a provider and the
// tool's own input schema.
type Change struct {
	// Pointer is the JSON pointer of the subschema, in the tool's input
	// schema ("" is the whole schema).
	Pointer string `json:"pointer"`
	// Keyword is the keyword concerned.
	Keyword string `json:"keyword"`
	// What is one of the Change constants.
	What string `json:"what"`
}

// What a change is.
const (
	// ChangeMoved: the keyword is not in the format's subset; it is
	// written into the subschema's description and checked on the call.
	ChangeMoved = "moved to the description"
	// ChangeClosed: an object that admitted undeclared members is sent
	// closed (additionalProperties false), as strict mode requires.
	ChangeClosed = "object closed"
	// ChangeAnyOf: oneOf is sent as anyOf, which the format has.
	ChangeAnyOf = "sent as anyOf"
)

// Loop binds a kernel session to one format: its tools in that shape, and
// the provider's tool calls run through the session.
type Loop struct {
	s      *kernel.Session
	format Format
	opts   Options

	mu    sync.Mutex
	specs map[*catalog.Entry]*rendered // one rendering per tool, made once
	// listed: the first listing is done (it waited for the tools whose
	// offer was not known yet).
	listed bool
}

// rendered is a tool's definition in the loop's format and strictness,
// before any request-wide budget is applied.
type rendered struct {
	spec Spec
	// lax is the non-strict definition, used when a request-wide budget
	// leaves the tool out of strict mode.
	lax json.RawMessage
	// cost is what the strict definition takes of Anthropic's budget.
	cost budget
	// unnull: the strict schema made optional properties nullable, so a
	// null argument there means the argument was left out.
	unnull bool
}

// New binds s to format. opts may be nil.
func New(s *kernel.Session, format Format, opts *Options) (*Loop, error) {
	if _, err := ParseFormat(string(format)); err != nil {
		return nil, err
	}
	l := &Loop{s: s, format: format, specs: map[*catalog.Entry]*rendered{}}
	if opts != nil {
		l.opts = *opts
		l.opts.StrictTools = slices.Clone(opts.StrictTools)
	}
	return l, nil
}

// Session is the kernel session the loop calls through.
func (l *Loop) Session() *kernel.Session { return l.s }

// Format is the loop's format.
func (l *Loop) Format() Format { return l.format }

// Specs are the tools to offer the model now, in the session's order. A
// tool_search call activates tools for the session, so the specs of the
// next turn include them: a host asks again before each request. A tool
// whose schemas do not resolve fails the listing (internal). The first
// listing waits, at most limits.UpstreamListWait, for the tools whose
// offer is not known yet (another server's, starting), as an MCP client's
// first tools/list does, so that a host that lists once sees them.
func (l *Loop) Specs() ([]Spec, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.listingWait())
	list := l.s.SpecsWithin
	if l.opts.AllGranted {
		list = l.s.GrantedWithin
	}
	entries := list(ctx)
	cancel()
	out := make([]Spec, 0, len(entries))
	var spent budget
	for _, e := range entries {
		r, err := l.rendered(e)
		if err != nil {
			return nil, err
		}
		spec := r.spec
		spec.Changes = slices.Clone(spec.Changes)
		if spec.Strict && !l.strictAsked(e.Name) {
			spec.Strict, spec.NotStrict, spec.Definition, spec.Changes = false, "not among the tools strict mode was asked for (Options.StrictTools)", r.lax, nil
		}
		if spec.Strict && l.format == Anthropic {
			if why := spent.admit(r.cost); why != "" {
				spec.Strict, spec.NotStrict, spec.Definition, spec.Changes = false, why, r.lax, nil
			}
		}
		out = append(out, spec)
	}
	return out, nil
}

// listingWait is how long this listing waits for tools whose offer is
// not known yet: limits.UpstreamListWait the first time, not at all after
// (a tool known later is offered from the next listing on).
func (l *Loop) listingWait() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.listed {
		return 0
	}
	l.listed = true
	return limits.UpstreamListWait
}

// strictAsked reports whether strict mode is asked for the named tool.
func (l *Loop) strictAsked(name string) bool {
	return l.opts.Strict && (len(l.opts.StrictTools) == 0 || slices.Contains(l.opts.StrictTools, name))
}

// Tools are the definitions of Specs alone, the list a request carries.
func (l *Loop) Tools() ([]json.RawMessage, error) {
	specs, err := l.Specs()
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(specs))
	for i, s := range specs {
		out[i] = s.Definition
	}
	return out, nil
}

// rendered renders e once.
func (l *Loop) rendered(e *catalog.Entry) (*rendered, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.specs[e]; ok {
		return r, nil
	}
	r, err := render(e, l.format, l.opts.Strict)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "tool %s cannot be listed as %s", e.Name, l.format)
	}
	l.specs[e] = r
	return r, nil
}

// render is e's definition in format, strict if asked and possible.
func render(e *catalog.Entry, format Format, strict bool) (*rendered, error) {
	if err := checkName(e.Name, format); err != nil {
		return nil, err
	}
	if format == MCP {
		return renderMCP(e, strict)
	}
	if format == Gemini {
		return renderGemini(e, strict)
	}
	listed, _, err := e.Listed()
	if err != nil {
		return nil, err
	}
	r := &rendered{spec: Spec{Name: e.Name}}
	if r.lax, err = definition(format, e, listed, false); err != nil {
		return nil, err
	}
	r.spec.Definition = r.lax
	if !strict {
		return r, nil
	}
	full, _, err := e.Schemas()
	if err != nil {
		return nil, err
	}
	sf := strictForm(full, rulesFor(format))
	if sf.err != nil {
		r.spec.NotStrict = sf.err.Error()
		return r, nil
	}
	if r.spec.Definition, err = definition(format, e, sf.schema, true); err != nil {
		return nil, err
	}
	r.spec.Strict, r.spec.Changes, r.cost, r.unnull = true, sf.changes, sf.cost, sf.nulled
	return r, nil
}

// definition is the tool definition of a format with the OpenAI or
// Anthropic shape.
func definition(format Format, e *catalog.Entry, schema any, strict bool) (json.RawMessage, error) {
	var v any
	switch format {
	case Anthropic:
		v = anthropicTool{Name: e.Name, Description: e.Description, InputSchema: schema, Strict: strict}
	case OpenAI:
		v = openAITool{Type: "function", Function: openAIFunction{Name: e.Name, Description: e.Description, Parameters: schema, Strict: strict}}
	case OpenAIResponses:
		v = openAIResponsesTool{Type: "function", Name: e.Name, Description: e.Description, Parameters: schema, Strict: strict}
	default:
		return nil, fmt.Errorf("hostloop: no definition for format %q", format)
	}
	return json.Marshal(v)
}

// The definitions' shapes, as the providers document them: Anthropic's
// tools[] (https://platform.claude.com/docs/en/agents-and-tools/tool-use/define-tools),
// OpenAI Chat Completions' tools[] and Responses' tools[]
// (https://platform.openai.com/docs/guides/function-calling).
type (
	anthropicTool struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		InputSchema any    `json:"input_schema"`
		Strict      bool   `json:"strict,omitempty"`
	}
	openAITool struct {
		Type     string         `json:"type"`
		Function openAIFunction `json:"function"`
	}
	openAIFunction struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Parameters  any    `json:"parameters"`
		Strict      bool   `json:"strict"`
	}
	openAIResponsesTool struct {
		Type        string `json:"type"`
		Name        string `json:"name"`
		Description string `json:"description"`
		Parameters  any    `json:"parameters"`
		// Strict is always sent: the Responses API's default is true.
		Strict bool `json:"strict"`
	}
)

// noStrictMode is why a tool of a format without a strict mode is not
// strict.
func noStrictMode(format Format) string {
	return fmt.Sprintf("%s has no per-tool strict mode: the kernel validates the arguments of every call", format)
}
