package hostloop

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/limits"
)

// Gemini's function declarations take parameters in a subset of the
// OpenAPI 3.0 schema object (https://ai.google.dev/api/caching#Schema):
// type (one, upper case), format, description, nullable, enum (strings),
// items, minItems, maxItems, properties, required, propertyOrdering,
// minProperties, maxProperties, minLength, maxLength, pattern, minimum,
// maximum, anyOf, default. References are inlined. What the subset lacks
// and only narrows the values is moved into the description; a schema the
// subset cannot shape (recursive, a tuple, a union of types, a property
// name outside Gemini's rule) is sent whole as parametersJsonSchema, which
// takes JSON Schema and is mutually exclusive with parameters
// (https://ai.google.dev/api/caching#FunctionDeclaration).

// geminiSchema is one node of Gemini's schema subset.
type geminiSchema struct {
	Type             string                   `json:"type,omitempty"`
	Format           string                   `json:"format,omitempty"`
	Description      string                   `json:"description,omitempty"`
	Nullable         bool                     `json:"nullable,omitempty"`
	Enum             []string                 `json:"enum,omitempty"`
	Items            *geminiSchema            `json:"items,omitempty"`
	MinItems         *int                     `json:"minItems,omitempty"`
	MaxItems         *int                     `json:"maxItems,omitempty"`
	Properties       map[string]*geminiSchema `json:"properties,omitempty"`
	Required         []string                 `json:"required,omitempty"`
	PropertyOrdering []string                 `json:"propertyOrdering,omitempty"`
	MinProperties    *int                     `json:"minProperties,omitempty"`
	MaxProperties    *int                     `json:"maxProperties,omitempty"`
	MinLength        *int                     `json:"minLength,omitempty"`
	MaxLength        *int                     `json:"maxLength,omitempty"`
	Pattern          string                   `json:"pattern,omitempty"`
	Minimum          *float64                 `json:"minimum,omitempty"`
	Maximum          *float64                 `json:"maximum,omitempty"`
	AnyOf            []*geminiSchema          `json:"anyOf,omitempty"`
	Default          json.RawMessage          `json:"default,omitempty"`
}

// geminiFunction is a FunctionDeclaration; a request carries them in a
// tool's functionDeclarations.
type geminiFunction struct {
	Name                 string             `json:"name"`
	Description          string             `json:"description"`
	Parameters           *geminiSchema      `json:"parameters,omitempty"`
	ParametersJSONSchema *jsonschema.Schema `json:"parametersJsonSchema,omitempty"`
}

// geminiFormats are the formats the subset names, by type.
var geminiFormats = map[string][]string{
	"string": {"enum", "date-time"}, "number": {"float", "double"}, "integer": {"int32", "int64"},
}

// ChangeWhole: the subset cannot shape the schema, so it is sent whole
// (Gemini's parametersJsonSchema); Keyword and Pointer say where.
const ChangeWhole = "schema sent whole as parametersJsonSchema"

func renderGemini(e *catalog.Entry, strict bool) (*rendered, error) {
	full, _, err := e.Schemas()
	if err != nil {
		return nil, err
	}
	g := &geminizer{root: full, inlining: map[*jsonschema.Schema]bool{}, seen: map[Change]bool{}}
	fn := geminiFunction{Name: e.Name, Description: e.Description}
	params := g.node(full, "")
	switch {
	case g.whole != nil:
		fn.ParametersJSONSchema = full
		g.changes = []Change{*g.whole}
	case len(params.Properties) > 0:
		fn.Parameters = params
	}
	def, err := json.Marshal(fn)
	if err != nil {
		return nil, err
	}
	r := &rendered{spec: Spec{Name: e.Name, Definition: def, Changes: g.changes}, lax: def}
	if strict {
		r.spec.NotStrict = noStrictMode(Gemini)
	}
	return r, nil
}

// geminizer transforms one schema into Gemini's subset.
type geminizer struct {
	root     *jsonschema.Schema
	inlining map[*jsonschema.Schema]bool // refs being inlined, against recursion
	changes  []Change
	seen     map[Change]bool
	whole    *Change // why the schema goes whole, when it must
	inlined  int     // nodes written inside inlined references
}

func (g *geminizer) sendWhole(ptr, keyword string) {
	if g.whole == nil {
		g.whole = &Change{Pointer: ptr, Keyword: keyword, What: ChangeWhole}
	}
}

func (g *geminizer) change(ptr, keyword, what string) {
	c := Change{Pointer: ptr, Keyword: keyword, What: what}
	if !g.seen[c] {
		g.seen[c] = true
		g.changes = append(g.changes, c)
	}
}

// node transforms the subschema s found at ptr.
func (g *geminizer) node(s *jsonschema.Schema, ptr string) *geminiSchema {
	if s == nil || g.whole != nil {
		return nil
	}
	if s.Ref != "" {
		return g.ref(s, ptr)
	}
	if len(g.inlining) > 0 {
		if g.inlined++; g.inlined > limits.GeminiInlinedNodes {
			g.sendWhole(ptr, "$ref") // the references fan out
			return nil
		}
	}
	out := &geminiSchema{Description: s.Description, Default: s.Default}
	mv := &moved{}
	typ := g.types(s, out, ptr)
	g.values(s, out, mv, typ)
	g.object(s, out, mv, ptr)
	if len(s.PrefixItems) > 0 || len(s.ItemsArray) > 0 {
		g.sendWhole(ptr, "prefixItems")
	}
	out.Items = g.node(s.Items, ptr+"/items")
	out.MinItems, out.MaxItems = s.MinItems, s.MaxItems
	out.MinLength, out.MaxLength, out.Pattern = s.MinLength, s.MaxLength, s.Pattern
	out.Minimum, out.Maximum = s.Minimum, s.Maximum
	if s.Format != "" {
		if slices.Contains(geminiFormats[typ], s.Format) {
			out.Format = s.Format
		} else {
			mv.add("format", s.Format)
		}
	}
	for i, b := range s.AnyOf {
		out.AnyOf = append(out.AnyOf, g.node(b, fmt.Sprintf("%s/anyOf/%d", ptr, i)))
	}
	if len(s.OneOf) > 0 {
		g.change(ptr, "oneOf", ChangeAnyOf)
		for i, b := range s.OneOf {
			out.AnyOf = append(out.AnyOf, g.node(b, fmt.Sprintf("%s/oneOf/%d", ptr, i)))
		}
	}
	g.lacking(s, mv)
	if len(mv.keys) > 0 {
		d := &jsonschema.Schema{Description: out.Description}
		mv.describe(d)
		out.Description = d.Description
		for _, k := range mv.keys {
			g.change(ptr, k, ChangeMoved)
		}
	}
	return out
}

// ref inlines the subschema a reference names.
func (g *geminizer) ref(s *jsonschema.Schema, ptr string) *geminiSchema {
	target := resolveRef(g.root, s.Ref)
	switch {
	case target == nil:
		g.sendWhole(ptr, "$ref")
		return nil
	case g.inlining[target]:
		g.sendWhole(ptr, "$ref") // recursive: the subset has no references
		return nil
	}
	g.inlining[target] = true
	defer delete(g.inlining, target)
	out := g.node(target, strings.TrimPrefix(s.Ref, "#"))
	if out != nil && s.Description != "" {
		c := *out
		c.Description = s.Description
		out = &c
	}
	return out
}

// types sets out's type from s's, and returns it (lower case); "" when s
// names none.
func (g *geminizer) types(s *jsonschema.Schema, out *geminiSchema, ptr string) string {
	_, unknown := unknownType(s)
	ts := slices.Clone(s.Types)
	if s.Type != "" {
		ts = append(ts, s.Type)
	}
	if slices.Contains(ts, "null") {
		out.Nullable = true
		ts = slices.DeleteFunc(ts, func(t string) bool { return t == "null" })
	}
	switch {
	case len(ts) > 1 || unknown:
		g.sendWhole(ptr, "type")
		return ""
	case len(ts) == 1:
		out.Type = strings.ToUpper(ts[0])
		return ts[0]
	case s.Enum == nil && s.Const == nil && len(s.AnyOf) == 0 && len(s.OneOf) == 0:
		// The subset requires a type; a schema of any value has none.
		g.sendWhole(ptr, "type")
	}
	return ""
}

// values carries enum and const where they are strings.
func (g *geminizer) values(s *jsonschema.Schema, out *geminiSchema, mv *moved, typ string) {
	vals := slices.Clone(s.Enum)
	if s.Const != nil {
		vals = append(vals, *s.Const)
	}
	if len(vals) == 0 {
		return
	}
	strs := make([]string, 0, len(vals))
	for _, v := range vals {
		if str, ok := v.(string); ok {
			strs = append(strs, str)
		}
	}
	if len(strs) < len(vals) || (typ != "" && typ != "string") || (s.Enum != nil && s.Const != nil) {
		if s.Enum != nil {
			mv.add("enum", s.Enum)
		}
		if s.Const != nil {
			mv.add("const", *s.Const)
		}
		if out.Type == "" {
			if ts := typesOf(vals); len(ts) == 1 {
				out.Type = strings.ToUpper(ts[0])
			}
		}
		return
	}
	out.Type, out.Enum = "STRING", strs
}

// object carries properties, in order.
func (g *geminizer) object(s *jsonschema.Schema, out *geminiSchema, mv *moved, ptr string) {
	if len(s.PatternProperties) > 0 {
		mv.add("patternProperties", s.PatternProperties)
	}
	if a := s.AdditionalProperties; a != nil && !isFalse(a) {
		mv.add("additionalProperties", a)
	}
	out.MinProperties, out.MaxProperties = s.MinProperties, s.MaxProperties
	if len(s.Properties) == 0 {
		return
	}
	out.Properties = map[string]*geminiSchema{}
	out.PropertyOrdering = propertyOrder(s)
	for _, name := range out.PropertyOrdering {
		if !geminiParamName(name) {
			g.sendWhole(ptr+"/properties/"+escape(name), "properties")
		}
		out.Properties[name] = g.node(s.Properties[name], ptr+"/properties/"+escape(name))
	}
	out.Required = slices.Clone(s.Required)
}

// lacking moves the keywords the subset does not have.
func (g *geminizer) lacking(s *jsonschema.Schema, mv *moved) {
	for _, n := range []struct {
		key string
		v   *float64
	}{{"exclusiveMinimum", s.ExclusiveMinimum}, {"exclusiveMaximum", s.ExclusiveMaximum}, {"multipleOf", s.MultipleOf}} {
		if n.v != nil {
			mv.add(n.key, *n.v)
		}
	}
	if s.UniqueItems {
		mv.add("uniqueItems", true)
	}
	if len(s.AllOf) > 0 {
		mv.add("allOf", s.AllOf)
	}
	for _, k := range []struct {
		key string
		s   *jsonschema.Schema
	}{{"contains", s.Contains}, {"not", s.Not}, {"if", s.If}, {"then", s.Then}, {"else", s.Else},
		{"propertyNames", s.PropertyNames}, {"unevaluatedProperties", s.UnevaluatedProperties},
		{"unevaluatedItems", s.UnevaluatedItems}} {
		mv.addSchema(k.key, k.s)
	}
	if len(s.DependentRequired) > 0 {
		mv.add("dependentRequired", s.DependentRequired)
	}
	if len(s.DependentSchemas) > 0 {
		mv.add("dependentSchemas", s.DependentSchemas)
	}
}
