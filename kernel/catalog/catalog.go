// Package catalog holds the tools a runtime offers, each described by an
// Entry, and derives what a session may see from the capabilities it holds.
//
// The catalog a model sees is defence in depth and a context optimization;
// it is not the security boundary. The kernel checks every call against the
// complete catalog and the held capabilities. Spec derivation reads nothing
// but the capability set and the session's activated tools, so the same
// capabilities yield the same tool list whatever the client.
package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/jsonvalid"
	"github.com/capkit/capkit/internal/toolname"
	"github.com/capkit/capkit/limits"
)

// ToolSearchName is the discovery tool's name. Search never returns it.
const ToolSearchName = "tool_search"

// ErrSchema marks a tool whose schemas do not resolve: a defect of the
// tool's registration, reported when the tool is first listed or called.
var ErrSchema = fault.NewMark("catalog: schema does not resolve")

// Annotations are the MCP behaviour hints of a tool.
type Annotations struct {
	Title       string
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool
}

// AnnotationsFor derives hints from an effect.
func AnnotationsFor(e capability.Effect) Annotations {
	return Annotations{
		ReadOnly:    e.ReadOnly(),
		Destructive: e.Destructive(),
		Idempotent:  e.ReadOnly(),
		OpenWorld:   e.OpenWorld(),
	}
}

// Entry describes one tool.
type Entry struct {
	Name   string
	Effect capability.Effect
	// Hot entries are offered without discovery; the rest are deferred until
	// tool_search returns them to the session.
	Hot bool
	// Summary is the short discovery text; Description the full text the
	// model reads: what it needs to call the tool well (bounds, windows,
	// the rules it meets, an example where the arguments are not obvious).
	Summary     string
	Description string
	// InputSchema (an object schema) and OutputSchema (an object schema,
	// or nil for none) are the tool's schemas, unless Infer is set; read
	// them with Schemas.
	InputSchema  *jsonschema.Schema
	OutputSchema *jsonschema.Schema
	// Infer, when set in place of the schemas, makes them on the tool's
	// first listing or call (typed tools infer theirs from Go types; doing
	// it for every tool at set-up would slow every host's start-up for
	// tools a session may never list: bench/RESULTS.md, start-up).
	Infer func() (input, output *jsonschema.Schema, err error)
	// Annotations default to AnnotationsFor(Effect) when nil.
	Annotations *Annotations
	// Origin, when set, names who defines the tool besides capkit ("upstream
	// memory": another MCP server's tool behind the kernel). Its name may
	// then use the wider set such tools have (see Validate), and its
	// description and summary are that origin's text: untrusted data,
	// shown as the tool's own and never as capkit's.
	Origin string

	// schemas resolves the schemas once, on the first validation or
	// listing, and encoded encodes them once, for the first listing: most
	// processes list or call a few of the tools, and resolving and
	// encoding every tool's at set-up would be most of a host's set-up.
	schemas func() (*schemas, error)
	encoded func() (*encoded, error)
	// nameWords and textWords are what Search matches: the words of the
	// name, and those of the title and discovery text.
	nameWords, textWords []string
}

// schemas are an entry's schemas, resolved, and the input schema
// compiled.
type schemas struct {
	input, output *jsonschema.Schema
	// listedIn and listedOut are the schemas as clients are given them
	// (see listed).
	listedIn, listedOut *jsonschema.Schema
	resolved            *jsonschema.Resolved
	outResolved         *jsonschema.Resolved // nil without an output schema
	// fast validates encoded arguments in one pass; nil when the schema
	// uses keywords outside its subset.
	fast *jsonvalid.Validator
}

// encoded are an entry's schemas encoded as JSON, for transports.
type encoded struct{ input, output json.RawMessage }

// Validate checks that e is complete: its name, effect, description, and
// that its schemas are object schemas (or that Infer alone is set).
// Inferred schemas, and whether any schema resolves, are checked once,
// when the entry is first listed or called ([Entry.Schemas],
// [Entry.ValidateArgs]), or for every entry by [Catalog.Check].
func (e *Entry) Validate() error {
	switch {
	case e.Origin == "" && !toolname.Valid(e.Name):
		return fmt.Errorf("catalog: tool name %q must match ^[a-z][a-z0-9_]{0,63}$", e.Name)
	case e.Origin != "" && !ValidExternalName(e.Name):
		return fmt.Errorf("catalog: tool name %q (%s) must match ^[A-Za-z][A-Za-z0-9_-]{0,63}$", e.Name, e.Origin)
	}
	if !e.Effect.Valid() {
		return fmt.Errorf("catalog: tool %q: unknown effect %q", e.Name, e.Effect)
	}
	if strings.TrimSpace(e.Description) == "" {
		return fmt.Errorf("catalog: tool %q: empty description", e.Name)
	}
	if e.Infer != nil {
		if e.InputSchema != nil || e.OutputSchema != nil {
			return fmt.Errorf("catalog: tool %q: schemas given and inferred", e.Name)
		}
		return nil
	}
	return objectSchemas(e.Name, e.InputSchema, e.OutputSchema)
}

// objectSchemas checks that in is an object schema, and out when it is
// not nil.
func objectSchemas(name string, in, out *jsonschema.Schema) error {
	if in == nil || in.Type != "object" {
		return fmt.Errorf("catalog: tool %q: input schema must be an object schema", name)
	}
	if out != nil && out.Type != "object" {
		return fmt.Errorf("catalog: tool %q: output schema must be an object schema", name)
	}
	return nil
}

// ValidExternalName reports whether name is a name a tool with an Origin
// may have: a letter, then letters, digits, '_' and '-', at most 64 bytes
// in all (what every MCP client accepts).
func ValidExternalName(name string) bool { return toolname.ValidExternal(name) }

// resolve infers e's schemas if need be, resolves them and compiles the
// input schema. Its errors wrap ErrSchema.
func (e *Entry) resolve() (*schemas, error) {
	in, out := e.InputSchema, e.OutputSchema
	if e.Infer != nil {
		var err error
		if in, out, err = e.Infer(); err != nil {
			return nil, fmt.Errorf("%w: tool %q: %w", ErrSchema, e.Name, err)
		}
		if err := objectSchemas(e.Name, in, out); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSchema, err)
		}
	}
	resolved, err := in.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: tool %q: input schema: %w", ErrSchema, e.Name, err)
	}
	var outResolved *jsonschema.Resolved
	if out != nil {
		if outResolved, err = out.Resolve(nil); err != nil {
			return nil, fmt.Errorf("%w: tool %q: output schema: %w", ErrSchema, e.Name, err)
		}
	}
	s := &schemas{input: in, output: out, resolved: resolved, outResolved: outResolved,
		listedIn: listed(in, true), listedOut: listed(out, false)}
	s.fast, _ = jsonvalid.Compile(in)
	return s, nil
}

// listed is s as a client is given it: without what tells a client
// nothing, since the model pays for every byte of a listing on every
// turn. "additionalProperties": false goes (the kernel refuses unknown
// arguments with a message, and results are what the tool's types
// encode), and so does "null" in an argument's type list (null is what
// leaving the argument out already means). s itself, which validates,
// is not changed. nil gives nil.
func listed(s *jsonschema.Schema, input bool) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	c := s.CloneSchemas()
	trim(c, input)
	return c
}

// trim removes, from d and the schemas inside it, what listed leaves out.
func trim(d *jsonschema.Schema, input bool) {
	if d == nil {
		return
	}
	if a := d.AdditionalProperties; a != nil && a.Not != nil && reflect.DeepEqual(*a.Not, jsonschema.Schema{}) {
		d.AdditionalProperties = nil
	}
	if i := slices.Index(d.Types, "null"); input && i >= 0 && len(d.Types) == 2 {
		d.Type, d.Types = d.Types[1-i], nil
	}
	if !input {
		d.Required = nil
	}
	for _, p := range d.Properties {
		trim(p, input)
	}
	for _, p := range d.Defs {
		trim(p, input)
	}
	for _, l := range [][]*jsonschema.Schema{d.PrefixItems, d.AnyOf, d.OneOf, d.AllOf} {
		for _, p := range l {
			trim(p, input)
		}
	}
	trim(d.Items, input)
	trim(d.AdditionalProperties, input)
}

// encode encodes e's listed schemas once they resolve. Its errors wrap
// ErrSchema.
func (e *Entry) encode() (*encoded, error) {
	s, err := e.schemas()
	if err != nil {
		return nil, err
	}
	var enc encoded
	if enc.input, err = json.Marshal(s.listedIn); err != nil {
		return nil, fmt.Errorf("%w: tool %q: input schema: %w", ErrSchema, e.Name, err)
	}
	if s.output != nil {
		if enc.output, err = json.Marshal(s.listedOut); err != nil {
			return nil, fmt.Errorf("%w: tool %q: output schema: %w", ErrSchema, e.Name, err)
		}
	}
	return &enc, nil
}

// Schemas returns the input schema and the output schema (nil when the
// tool has none), inferred if need be, once they resolve; it fails,
// wrapping ErrSchema, when they do not. Callers must not modify them.
func (e *Entry) Schemas() (input, output *jsonschema.Schema, err error) {
	s, err := e.schemas()
	if err != nil {
		return nil, nil, err
	}
	return s.input, s.output, nil
}

// ValidateArgs checks encoded arguments against the input schema: one JSON
// object, no duplicate member names, valid against the schema. Entries must
// come from a Catalog. An error wrapping ErrSchema is the tool's defect,
// not the arguments'.
func (e *Entry) ValidateArgs(args []byte) error {
	s, err := e.schemas()
	if err != nil {
		return err
	}
	if s.fast != nil {
		return s.fast.Validate(args)
	}
	var v any
	if err := jsonv2.Unmarshal(args, &v); err != nil {
		return err
	}
	return s.resolved.Validate(v)
}

// ValidateOutput checks encoded structured content against the output
// schema, as a client that validates results does; it accepts anything
// when the tool has no output schema. Entries must come from a Catalog.
func (e *Entry) ValidateOutput(structured []byte) error {
	s, err := e.schemas()
	if err != nil || s.outResolved == nil {
		return err
	}
	var v any
	if err := jsonv2.Unmarshal(structured, &v); err != nil {
		return err
	}
	return s.outResolved.Validate(v)
}

// Listed returns the schemas as clients are given them: the schemas less
// what tells a client nothing (see listed). Callers must not modify them.
func (e *Entry) Listed() (input, output *jsonschema.Schema, err error) {
	s, err := e.schemas()
	if err != nil {
		return nil, nil, err
	}
	return s.listedIn, s.listedOut, nil
}

// SchemaJSON returns the listed input schema and output schema (nil when
// the tool has none) encoded as JSON. It fails, wrapping ErrSchema, when
// they do not resolve.
func (e *Entry) SchemaJSON() (input, output json.RawMessage, err error) {
	enc, err := e.encoded()
	if err != nil {
		return nil, nil, err
	}
	return enc.input, enc.output, nil
}

// Hints returns the entry's annotations, derived from its effect if unset;
// their Title, when they name none, is derived from the name.
func (e *Entry) Hints() Annotations {
	a := AnnotationsFor(e.Effect)
	if e.Annotations != nil {
		a = *e.Annotations
	}
	if a.Title == "" {
		a.Title = titleOf(e.Name)
	}
	return a
}

// titleOf is the title of a tool registered without one: its name as
// words, the first capitalized ("zip_list" is "Zip list"), so every tool a
// client lists has one.
func titleOf(name string) string {
	t := strings.ReplaceAll(name, "_", " ")
	if t == "" {
		return t
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

func (e *Entry) discoveryText() string {
	if e.Summary != "" {
		return e.Summary
	}
	return e.Description
}

// Catalog is an assembled, validated and frozen set of entries.
type Catalog struct {
	entries []*Entry
	index   map[string]int
}

// New validates every entry and rejects duplicate names. The entries are
// copied; the catalog never changes afterwards.
func New(entries []Entry) (*Catalog, error) {
	c := &Catalog{index: make(map[string]int, len(entries))}
	for i := range entries {
		e := entries[i]
		if err := e.Validate(); err != nil {
			return nil, err
		}
		if _, dup := c.index[e.Name]; dup {
			return nil, fmt.Errorf("catalog: duplicate tool name %q", e.Name)
		}
		ep := &e
		e.schemas = sync.OnceValues(ep.resolve)
		e.encoded = sync.OnceValues(ep.encode)
		e.nameWords = words(e.Name)
		e.textWords = words(e.Hints().Title + " " + e.discoveryText())
		c.index[e.Name] = len(c.entries)
		c.entries = append(c.entries, ep)
	}
	return c, nil
}

// Check resolves and encodes every entry's schemas (what listing or
// calling each tool would) and returns the failures joined. Tests call it
// to hold every registered tool to schemas that resolve.
func (c *Catalog) Check() error {
	var errs []error
	for _, e := range c.entries {
		if _, err := e.encoded(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Len is the number of entries.
func (c *Catalog) Len() int { return len(c.entries) }

// Entries returns every entry in registration order. Callers must not
// modify them.
func (c *Catalog) Entries() []*Entry { return slices.Clone(c.entries) }

// Lookup returns the entry named name and its position.
func (c *Catalog) Lookup(name string) (*Entry, int, bool) {
	i, ok := c.index[name]
	if !ok {
		return nil, -1, false
	}
	return c.entries[i], i, true
}

// SpecsFor returns every entry some capability in caps grants.
func (c *Catalog) SpecsFor(caps capability.Set) []*Entry {
	var out []*Entry
	for _, e := range c.entries {
		if caps.Grants(e.Effect) {
			out = append(out, e)
		}
	}
	return out
}

// DeferredSpecsFor returns the hot entries plus those activated, among the
// entries caps grants. Activation never grants: a name without authority is
// omitted.
func (c *Catalog) DeferredSpecsFor(caps capability.Set, activated func(name string) bool) []*Entry {
	var out []*Entry
	for _, e := range c.entries {
		if (e.Hot || (activated != nil && activated(e.Name))) && caps.Grants(e.Effect) {
			out = append(out, e)
		}
	}
	return out
}

// Search ranks the entries caps grants against the words of query,
// matching whole words only (a plural "s" aside: "files" finds "file"): a
// name equal to a term scores 8, a word of the name equal to it 4
// (read_file's words are read and file), and a word of the title or
// discovery text 1. A term that is only part of a word matches nothing, so
// "x" finds no tool for being inside "text". Ties break by name; an empty
// query lists everything in name order. limit is clamped to 1..12.
// tool_search itself is never returned, nor an entry keep refuses (nil
// keeps every entry).
func (c *Catalog) Search(caps capability.Set, query string, limit int, keep func(*Entry) bool) []*Entry {
	terms := words(query)
	for _, tok := range strings.Fields(strings.ToLower(query)) {
		if strings.Contains(tok, "_") && !slices.Contains(terms, tok) {
			terms = append(terms, tok) // a tool's name, matched whole
		}
	}
	type scored struct {
		score int
		e     *Entry
	}
	var matches []scored
	for _, e := range c.entries {
		if e.Name == ToolSearchName || !caps.Grants(e.Effect) || keep != nil && !keep(e) {
			continue
		}
		score := 0
		for _, t := range terms {
			if e.Name == t {
				score += 8
			}
			if slices.Contains(e.nameWords, t) {
				score += 4
			}
			if slices.Contains(e.textWords, t) {
				score++
			}
		}
		if score > 0 || len(terms) == 0 {
			matches = append(matches, scored{score, e})
		}
	}
	sort.Slice(matches, func(i, j int) bool {
		if matches[i].score != matches[j].score {
			return matches[i].score > matches[j].score
		}
		return matches[i].e.Name < matches[j].e.Name
	})
	limit = min(max(limit, limits.SearchMinResults), limits.SearchMaxResults)
	out := make([]*Entry, 0, min(limit, len(matches)))
	for _, m := range matches[:min(limit, len(matches))] {
		out = append(out, m.e)
	}
	return out
}

// words splits text into lower-case words (letters and digits; '_' and
// every other byte separate them), each without a plural "s", without
// duplicates.
func words(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
	}) {
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}
