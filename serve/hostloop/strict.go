package hostloop

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// The strict subsets, as documented:
//
// OpenAI (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas):
// types string, number, boolean, integer, object, array, enum, anyOf;
// strings pattern and format (date-time, time, date, duration, email,
// hostname, ipv4, ipv6, uuid); numbers multipleOf, maximum,
// exclusiveMaximum, minimum, exclusiveMinimum; arrays minItems, maxItems;
// local $ref and $defs, recursion allowed; the root an object, not anyOf;
// every property required (optional ones emulated by a union with null);
// additionalProperties false on every object; allOf, not,
// dependentRequired, dependentSchemas, if, then, else not supported; at
// most 5000 properties, 10 levels of nesting, 1000 enum values, 120,000
// characters of names, enum and const values.
//
// Anthropic (https://platform.claude.com/docs/en/build-with-claude/structured-outputs#json-schema-limitations):
// every basic type; enum of strings, numbers, booleans or nulls; const;
// anyOf; allOf but not with $ref; local $ref, $defs and definitions, not
// recursive; default; required; additionalProperties false on every object;
// formats date-time, time, date, duration, email, hostname, uri, ipv4,
// ipv6, uuid; minItems 0 or 1 only; simple patterns (no backreferences,
// lookaround, \b or large counted repeats); no numerical or string-length
// constraints. Per request, at most 20 strict tools, 24 optional
// parameters and 16 parameters with anyOf or a type list across the strict
// schemas (budget.admit).
//
// What a subset lacks and only narrows the values (a bound, a pattern) is
// moved into the subschema's description, as the providers' own SDKs do,
// and reported as a Change: the kernel checks it on the call. What cannot
// be dropped without admitting a different shape (an object whose members
// are a map, a tuple, a recursive schema where recursion is not allowed)
// makes the tool non-strict.

// rules are a provider's strict subset.
type rules struct {
	name string
	// requireAll: every property is required, an optional one made
	// nullable (OpenAI).
	requireAll bool
	formats    []string
	// numbers: minimum, maximum, their exclusive forms and multipleOf are
	// in the subset.
	numbers bool
	// maxItems is in the subset; minItems is, up to minItemsMax.
	maxItems    bool
	minItemsMax int
	// pattern reports whether a pattern is in the subset.
	pattern func(string) bool
	// defaults: default is in the subset.
	defaults bool
	// recursion: a $ref may lead back to a schema it is inside.
	recursion bool
	// primitiveEnums: enum and const values are strings, numbers,
	// booleans or null.
	primitiveEnums bool
	// limits: OpenAI's size limits apply.
	limits bool
}

var openAIRules = &rules{
	name: "OpenAI", requireAll: true, numbers: true, maxItems: true, minItemsMax: -1,
	formats: []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"},
	pattern: func(string) bool { return true }, recursion: true, limits: true,
}

var anthropicRules = &rules{
	name: "Anthropic", minItemsMax: 1, defaults: true, primitiveEnums: true,
	formats: []string{"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"},
	pattern: simplePattern,
}

func rulesFor(f Format) *rules {
	if f == Anthropic {
		return anthropicRules
	}
	return openAIRules
}

// OpenAI's documented size limits of one strict schema.
const (
	openAIMaxProperties = 5000
	openAIMaxDepth      = 10
	openAIMaxEnumValues = 1000
	openAIMaxStringSize = 120_000
)

// Anthropic's documented limits across the strict tools of one request.
const (
	anthropicMaxStrictTools = 20
	anthropicMaxOptional    = 24
	anthropicMaxUnions      = 16
)

// maxSimpleRepeat is the largest counted repeat a pattern keeps in
// Anthropic's subset: its documentation excludes "complex {n,m}
// quantifiers with large ranges" without a number, so a bound of our own.
const maxSimpleRepeat = 64

// simplePattern reports whether a pattern is within Anthropic's regex
// subset: no word boundaries and no large counted repeats (the schema's
// patterns are RE2, which has no backreferences or lookaround).
func simplePattern(p string) bool {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return false
	}
	var ok func(*syntax.Regexp) bool
	ok = func(re *syntax.Regexp) bool {
		switch re.Op {
		case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
			return false
		case syntax.OpRepeat:
			if re.Max > maxSimpleRepeat || re.Min > maxSimpleRepeat {
				return false
			}
		}
		return !slices.ContainsFunc(re.Sub, func(s *syntax.Regexp) bool { return !ok(s) })
	}
	return ok(re)
}

// budget is what strict schemas take of Anthropic's per-request limits.
type budget struct{ tools, optional, unions int }

// admit adds c to b and returns "" when the sum is within the limits;
// otherwise it leaves b as it was and says why.
func (b *budget) admit(c budget) string {
	sum := budget{b.tools + c.tools, b.optional + c.optional, b.unions + c.unions}
	if sum.tools > anthropicMaxStrictTools || sum.optional > anthropicMaxOptional || sum.unions > anthropicMaxUnions {
		return fmt.Sprintf("Anthropic allows at most %d strict tools, %d optional parameters and %d parameters with anyOf or a type list across a request's strict tools; the strict tools before this one take %d, %d and %d, and this one %d optional and %d with a union",
			anthropicMaxStrictTools, anthropicMaxOptional, anthropicMaxUnions, b.tools, b.optional, b.unions, c.optional, c.unions)
	}
	*b = sum
	return ""
}

// strict is a schema in a strict subset, or why it cannot be.
type strict struct {
	schema  *jsonschema.Schema
	changes []Change
	cost    budget
	// nulled: some optional property was made nullable.
	nulled bool
	err    error
}

// strictor transforms one schema.
type strictor struct {
	r    *rules
	root *jsonschema.Schema
	out  strict
	// sizes for OpenAI's limits
	properties, enumValues, stringSize int
}

// strictForm is in transformed into r's strict subset. in is not changed.
func strictForm(in *jsonschema.Schema, r *rules) strict {
	st := &strictor{r: r, root: in, out: strict{cost: budget{tools: 1}}}
	if len(in.AnyOf) > 0 || len(in.OneOf) > 0 {
		st.fail("", "the root is a union (anyOf/oneOf); strict mode needs one object at the root")
	}
	if !r.recursion && recursive(in) {
		st.fail("", "the schema is recursive (a $ref leads back into itself), which %s's strict mode does not allow", r.name)
	}
	out := st.node(in, "", 0)
	if out != nil {
		for _, defs := range []struct {
			key string
			in  map[string]*jsonschema.Schema
			out *map[string]*jsonschema.Schema
		}{{"$defs", in.Defs, &out.Defs}, {"definitions", in.Definitions, &out.Definitions}} {
			for _, name := range sortedKeys(defs.in) {
				if *defs.out == nil {
					*defs.out = map[string]*jsonschema.Schema{}
				}
				st.stringSize += len(name)
				(*defs.out)[name] = st.node(defs.in[name], "/"+defs.key+"/"+escape(name), 1)
			}
		}
	}
	if r.limits && st.out.err == nil {
		switch {
		case st.properties > openAIMaxProperties:
			st.fail("", "%d properties, past OpenAI's %d", st.properties, openAIMaxProperties)
		case st.enumValues > openAIMaxEnumValues:
			st.fail("", "%d enum values, past OpenAI's %d", st.enumValues, openAIMaxEnumValues)
		case st.stringSize > openAIMaxStringSize:
			st.fail("", "%d characters of names and enum values, past OpenAI's %d", st.stringSize, openAIMaxStringSize)
		}
	}
	if st.out.err != nil {
		return strict{err: st.out.err}
	}
	st.out.schema = out
	return st.out
}

// fail records the first reason the schema cannot be strict.
func (st *strictor) fail(ptr, format string, args ...any) {
	if st.out.err == nil {
		where := ""
		if ptr != "" {
			where = ptr + ": "
		}
		st.out.err = fmt.Errorf("%s%s", where, fmt.Sprintf(format, args...))
	}
}

func (st *strictor) change(ptr, keyword, what string) {
	st.out.changes = append(st.out.changes, Change{Pointer: ptr, Keyword: keyword, What: what})
}

// node transforms the subschema s found at ptr, depth objects deep.
func (st *strictor) node(s *jsonschema.Schema, ptr string, depth int) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	if st.r.limits && depth > openAIMaxDepth {
		st.fail(ptr, "nested deeper than OpenAI's %d levels", openAIMaxDepth)
		return nil
	}
	out := &jsonschema.Schema{Description: s.Description, Ref: s.Ref, Type: s.Type, Types: slices.Clone(s.Types)}
	mv := &moved{}
	st.refs(s, ptr)
	st.values(s, out, mv, ptr)
	if !typed(s) {
		st.fail(ptr, "admits a value of any type; strict mode needs a type")
	}
	if t, ok := unknownType(s); ok {
		st.fail(ptr, "type %q is not a JSON type", t)
	}
	st.object(s, out, mv, ptr, depth)
	st.array(s, out, mv, ptr, depth)
	st.scalars(s, out, mv, ptr)
	st.logic(s, out, mv, ptr, depth)
	if len(out.AnyOf) > 0 || len(out.Types) > 1 {
		st.out.cost.unions++
	}
	if st.r.defaults && s.Default != nil {
		out.Default = s.Default
	}
	mv.describe(out)
	for _, k := range mv.keys {
		st.change(ptr, k, ChangeMoved)
	}
	return out
}

// refs fails on references the subsets lack.
func (st *strictor) refs(s *jsonschema.Schema, ptr string) {
	switch {
	case s.Ref != "" && resolveRef(st.root, s.Ref) == nil:
		st.fail(ptr, "$ref %q is not a reference into the schema itself", s.Ref)
	case s.DynamicRef != "" || s.DynamicAnchor != "" || s.Anchor != "":
		st.fail(ptr, "$dynamicRef, $dynamicAnchor and $anchor are not in the strict subset")
	case s.ID != "" && s != st.root:
		st.fail(ptr, "$id inside the schema is not in the strict subset")
	}
}

// values carries enum and const, typing a node that has only them.
func (st *strictor) values(s, out *jsonschema.Schema, mv *moved, ptr string) {
	vals := slices.Clone(s.Enum)
	if s.Const != nil {
		vals = append(vals, *s.Const)
	}
	st.enumValues += len(vals)
	for _, v := range vals {
		if str, ok := v.(string); ok {
			st.stringSize += len(str)
		}
	}
	if st.r.primitiveEnums && slices.ContainsFunc(vals, complexValue) {
		if s.Enum != nil {
			mv.add("enum", s.Enum)
		}
		if s.Const != nil {
			mv.add("const", *s.Const)
		}
	} else {
		out.Enum, out.Const = slices.Clone(s.Enum), s.Const
	}
	if out.Type == "" && len(out.Types) == 0 && s.Ref == "" && len(s.AnyOf) == 0 && len(s.OneOf) == 0 && len(vals) > 0 {
		out.Types = typesOf(vals)
		if len(out.Types) == 1 {
			out.Type, out.Types = out.Types[0], nil
		}
	}
}

func complexValue(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// typesOf are the JSON types of vals, in a fixed order.
func typesOf(vals []any) []string {
	var ts []string
	for _, v := range vals {
		t := "null"
		switch v := v.(type) {
		case string:
			t = "string"
		case bool:
			t = "boolean"
		case float64:
			t = "number"
			if v == float64(int64(v)) {
				t = "integer"
			}
		case json.Number:
			t = "number"
		case map[string]any:
			t = "object"
		case []any:
			t = "array"
		}
		if !slices.Contains(ts, t) {
			ts = append(ts, t)
		}
	}
	if slices.Contains(ts, "integer") && slices.Contains(ts, "number") {
		ts = slices.DeleteFunc(ts, func(t string) bool { return t == "integer" })
	}
	sort.Strings(ts)
	return ts
}

// typed reports whether s constrains the type of its values.
func typed(s *jsonschema.Schema) bool {
	return s.Type != "" || len(s.Types) > 0 || s.Ref != "" || len(s.AnyOf) > 0 || len(s.OneOf) > 0 ||
		s.Enum != nil || s.Const != nil
}

// unknownType is a type s names that is not one of JSON's.
func unknownType(s *jsonschema.Schema) (string, bool) {
	for _, t := range s.Types {
		if !slices.Contains(jsonTypes, t) {
			return t, true
		}
	}
	if s.Type != "" && !slices.Contains(jsonTypes, s.Type) {
		return s.Type, true
	}
	return "", false
}

var jsonTypes = []string{"string", "number", "integer", "boolean", "object", "array", "null"}

func hasType(s *jsonschema.Schema, t string) bool { return s.Type == t || slices.Contains(s.Types, t) }

// object transforms what concerns objects: every object closed, its
// properties transformed (and, for OpenAI, all required).
func (st *strictor) object(s, out *jsonschema.Schema, mv *moved, ptr string, depth int) {
	if !hasType(s, "object") && s.Properties == nil {
		mv.addInt("minProperties", s.MinProperties)
		mv.addInt("maxProperties", s.MaxProperties)
		return
	}
	switch {
	case len(s.PatternProperties) > 0:
		st.fail(ptr, "patternProperties (members named by a pattern) cannot be expressed in strict mode, where every object is closed")
	case s.AdditionalProperties != nil && !isFalse(s.AdditionalProperties):
		st.fail(ptr, "additionalProperties is a schema (a map of members not declared); strict mode closes every object")
	case len(s.Properties) == 0 && s.AdditionalProperties == nil:
		st.fail(ptr, "an object that declares no members admits any; strict mode closes every object")
	case s.AdditionalProperties == nil:
		st.change(ptr, "additionalProperties", ChangeClosed)
	}
	out.AdditionalProperties = falseSchema()
	order := propertyOrder(s)
	st.properties += len(order)
	out.PropertyOrder = order
	out.Properties = make(map[string]*jsonschema.Schema, len(order))
	out.Required = slices.Clone(s.Required)
	for _, name := range order {
		st.stringSize += len(name)
		child := st.node(s.Properties[name], ptr+"/properties/"+escape(name), depth+1)
		if slices.Contains(s.Required, name) {
			out.Properties[name] = child
			continue
		}
		if st.r.requireAll {
			if child != nil && !admitsNull(st.root, s.Properties[name]) {
				child = withNull(child)
				st.out.nulled = true
			}
		} else {
			st.out.cost.optional++
		}
		out.Properties[name] = child
	}
	if st.r.requireAll {
		// Every property, and any name required but not declared (which
		// no value of a closed object has).
		out.Required = append(slices.Clone(order), slices.DeleteFunc(slices.Clone(s.Required), func(n string) bool { return slices.Contains(order, n) })...)
	}
	mv.addInt("minProperties", s.MinProperties)
	mv.addInt("maxProperties", s.MaxProperties)
	mv.addSchema("propertyNames", s.PropertyNames)
	mv.addSchema("unevaluatedProperties", s.UnevaluatedProperties)
	if len(s.DependentRequired) > 0 {
		mv.add("dependentRequired", s.DependentRequired)
	}
	if len(s.DependentSchemas) > 0 {
		mv.add("dependentSchemas", s.DependentSchemas)
	}
}

// array transforms what concerns arrays.
func (st *strictor) array(s, out *jsonschema.Schema, mv *moved, ptr string, depth int) {
	if len(s.PrefixItems) > 0 || len(s.ItemsArray) > 0 {
		st.fail(ptr, "a tuple (prefixItems or an items array) is not in the strict subset")
	}
	if hasType(s, "array") && s.Items == nil && len(s.PrefixItems) == 0 && len(s.ItemsArray) == 0 {
		st.fail(ptr, "an array whose items may be anything; strict mode needs a type for them")
	}
	out.Items = st.node(s.Items, ptr+"/items", depth+1)
	if m := s.MinItems; m != nil && (st.r.minItemsMax < 0 || *m <= st.r.minItemsMax) {
		out.MinItems = m
	} else {
		mv.addInt("minItems", m)
	}
	if st.r.maxItems {
		out.MaxItems = s.MaxItems
	} else {
		mv.addInt("maxItems", s.MaxItems)
	}
	if s.UniqueItems {
		mv.add("uniqueItems", true)
	}
	mv.addSchema("contains", s.Contains)
	mv.addInt("minContains", s.MinContains)
	mv.addInt("maxContains", s.MaxContains)
	mv.addSchema("unevaluatedItems", s.UnevaluatedItems)
	mv.addSchema("additionalItems", s.AdditionalItems)
}

// scalars transforms what concerns strings and numbers.
func (st *strictor) scalars(s, out *jsonschema.Schema, mv *moved, ptr string) {
	mv.addInt("minLength", s.MinLength)
	mv.addInt("maxLength", s.MaxLength)
	if s.Pattern != "" {
		if st.r.pattern(s.Pattern) {
			out.Pattern = s.Pattern
		} else {
			mv.add("pattern", s.Pattern)
		}
	}
	if s.Format != "" {
		if slices.Contains(st.r.formats, s.Format) {
			out.Format = s.Format
		} else {
			mv.add("format", s.Format)
		}
	}
	for _, n := range []struct {
		key string
		v   *float64
		to  **float64
	}{{"minimum", s.Minimum, &out.Minimum}, {"maximum", s.Maximum, &out.Maximum},
		{"exclusiveMinimum", s.ExclusiveMinimum, &out.ExclusiveMinimum},
		{"exclusiveMaximum", s.ExclusiveMaximum, &out.ExclusiveMaximum},
		{"multipleOf", s.MultipleOf, &out.MultipleOf}} {
		if n.v == nil {
			continue
		}
		if st.r.numbers {
			*n.to = n.v
		} else {
			mv.add(n.key, *n.v)
		}
	}
}

// logic transforms anyOf, oneOf (as anyOf) and the keywords of logic the
// subsets lack.
func (st *strictor) logic(s, out *jsonschema.Schema, mv *moved, ptr string, depth int) {
	switch {
	case len(s.AllOf) > 0:
		st.fail(ptr, "allOf is not expressed in strict mode, where each of its objects would be closed against the others")
	case len(s.AnyOf) > 0 && len(s.OneOf) > 0:
		st.fail(ptr, "anyOf and oneOf together are not in the strict subset")
	}
	for i, b := range s.AnyOf {
		out.AnyOf = append(out.AnyOf, st.node(b, fmt.Sprintf("%s/anyOf/%d", ptr, i), depth))
	}
	if len(s.OneOf) > 0 {
		st.change(ptr, "oneOf", ChangeAnyOf)
		for i, b := range s.OneOf {
			out.AnyOf = append(out.AnyOf, st.node(b, fmt.Sprintf("%s/oneOf/%d", ptr, i), depth))
		}
	}
	mv.addSchema("not", s.Not)
	mv.addSchema("if", s.If)
	mv.addSchema("then", s.Then)
	mv.addSchema("else", s.Else)
}

// withNull is c admitting null as well.
func withNull(c *jsonschema.Schema) *jsonschema.Schema {
	switch {
	case c.Ref != "" || c.Const != nil:
		return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{c, {Type: "null"}}}
	case len(c.AnyOf) > 0:
		c.AnyOf = append(c.AnyOf, &jsonschema.Schema{Type: "null"})
	case c.Type != "":
		c.Types, c.Type = []string{c.Type, "null"}, ""
	case len(c.Types) > 0:
		c.Types = append(c.Types, "null")
	}
	if c.Enum != nil {
		c.Enum = append(c.Enum, nil)
	}
	return c
}

// admitsNull reports whether the original subschema s admits null. It
// answers false when unsure (a recursive schema): the strict schema then
// adds null, which admits no value the tool would refuse once the call
// drops the null. Each subschema is judged once, so references that fan
// out cost their size, not their paths.
func admitsNull(root, s *jsonschema.Schema) bool {
	n := nullJudge{root: root, known: map[*jsonschema.Schema]bool{}, onPath: map[*jsonschema.Schema]bool{}}
	return n.admits(s)
}

type nullJudge struct {
	root          *jsonschema.Schema
	known, onPath map[*jsonschema.Schema]bool
}

func (n *nullJudge) admits(s *jsonschema.Schema) bool {
	if s == nil || n.onPath[s] {
		return false
	}
	if v, ok := n.known[s]; ok {
		return v
	}
	n.onPath[s] = true
	v := n.judge(s)
	delete(n.onPath, s)
	n.known[s] = v
	return v
}

func (n *nullJudge) judge(s *jsonschema.Schema) bool {
	if s.Ref != "" {
		return n.admits(resolveRef(n.root, s.Ref))
	}
	if s.Enum != nil && !slices.Contains(s.Enum, nil) {
		return false
	}
	if s.Const != nil && *s.Const != nil {
		return false
	}
	if s.Not != nil || s.If != nil || len(s.AllOf) > 0 {
		return false
	}
	if len(s.AnyOf) > 0 || len(s.OneOf) > 0 {
		return slices.ContainsFunc(append(slices.Clone(s.AnyOf), s.OneOf...), n.admits)
	}
	if s.Type != "" || len(s.Types) > 0 {
		return hasType(s, "null")
	}
	return true
}

// resolveRef returns the subschema a reference into root names ("#",
// "#/$defs/NAME", "#/definitions/NAME"), or nil.
func resolveRef(root *jsonschema.Schema, ref string) *jsonschema.Schema {
	if ref == "#" {
		return root
	}
	for prefix, defs := range map[string]map[string]*jsonschema.Schema{"#/$defs/": root.Defs, "#/definitions/": root.Definitions} {
		if name, ok := strings.CutPrefix(ref, prefix); ok && !strings.Contains(name, "/") {
			return defs[unescape(name)]
		}
	}
	return nil
}

// recursive reports whether a $ref in s leads back into a schema it is
// inside. Each subschema is walked once.
func recursive(root *jsonschema.Schema) bool {
	onPath, done := map[*jsonschema.Schema]bool{}, map[*jsonschema.Schema]bool{}
	var walk func(s *jsonschema.Schema) bool
	walk = func(s *jsonschema.Schema) bool {
		if s == nil || done[s] {
			return false
		}
		if onPath[s] {
			return true
		}
		onPath[s] = true
		defer func() { delete(onPath, s); done[s] = true }()
		if s.Ref != "" && walk(resolveRef(root, s.Ref)) {
			return true
		}
		return slices.ContainsFunc(children(s), walk)
	}
	return walk(root)
}

// children are the subschemas of s that validate parts of its values
// (not $defs, which only refs reach).
func children(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, name := range sortedKeys(s.Properties) {
		out = append(out, s.Properties[name])
	}
	for _, name := range sortedKeys(s.PatternProperties) {
		out = append(out, s.PatternProperties[name])
	}
	out = append(out, s.Items, s.AdditionalProperties, s.Contains, s.Not, s.If, s.Then, s.Else, s.PropertyNames)
	for _, l := range [][]*jsonschema.Schema{s.PrefixItems, s.ItemsArray, s.AnyOf, s.OneOf, s.AllOf} {
		out = append(out, l...)
	}
	return out
}

// isFalse reports whether s is the schema false, as jsonschema-go holds
// it ({"not": {}}).
func isFalse(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && reflect.DeepEqual(*s.Not, jsonschema.Schema{}) &&
		reflect.DeepEqual(*s, jsonschema.Schema{Not: s.Not})
}

func falseSchema() *jsonschema.Schema { return &jsonschema.Schema{Not: &jsonschema.Schema{}} }

// propertyOrder is s's properties in their declared order, then any others
// by name.
func propertyOrder(s *jsonschema.Schema) []string {
	order := make([]string, 0, len(s.Properties))
	seen := make(map[string]bool, len(s.Properties))
	for _, name := range append(slices.Clone(s.PropertyOrder), sortedKeys(s.Properties)...) {
		if _, ok := s.Properties[name]; ok && !seen[name] {
			seen[name] = true
			order = append(order, name)
		}
	}
	return order
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// escape and unescape are a JSON pointer token's escaping (RFC 6901).
func escape(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

func unescape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}

// moved collects the keywords of a subschema that the subset lacks, in
// the order found, for its description.
type moved struct {
	keys []string
	vals []any
}

func (m *moved) add(key string, v any) { m.keys, m.vals = append(m.keys, key), append(m.vals, v) }

func (m *moved) addInt(key string, v *int) {
	if v != nil {
		m.add(key, *v)
	}
}

func (m *moved) addSchema(key string, s *jsonschema.Schema) {
	if s != nil {
		m.add(key, s)
	}
}

// describe appends the moved keywords to s's description as one JSON
// object, which a model reads as the constraint it is: {"maxLength":128}.
func (m *moved) describe(s *jsonschema.Schema) {
	if len(m.keys) == 0 {
		return
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range m.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kj, _ := json.Marshal(k)
		vj, err := json.Marshal(m.vals[i])
		if err != nil {
			vj = []byte(`"?"`)
		}
		b.Write(kj)
		b.WriteByte(':')
		b.Write(vj)
	}
	b.WriteByte('}')
	if s.Description != "" {
		s.Description += "\n\n"
	}
	s.Description += b.String()
}
