// Package jsonvalid validates tool arguments against a JSON Schema in one
// pass over the encoded bytes, without first decoding them into Go maps.
//
// It compiles the subset of JSON Schema 2020-12 that tool input schemas use
// (type, properties, required, additionalProperties, items, enum of
// scalars, numeric bounds, string length and pattern, array length; the
// annotations title, description, default, examples, format are ignored as
// the draft specifies). Compile reports ok=false for any other keyword, and
// the caller falls back to github.com/google/jsonschema-go on the decoded
// value. Hand-written because no maintained Go validator works on a token
// stream; the kernel validates every call, and materializing the arguments
// as map[string]any dominated a call's cost. A differential fuzz test holds
// it to jsonschema-go's verdicts.
//
// Duplicate member names and invalid UTF-8 are always rejected (jsontext's
// defaults), so no downstream decoder can see a different value than the
// one validated.
package jsonvalid

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/capkit/capkit/internal/clip"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
)

type kind uint8

const (
	kNull kind = 1 << iota
	kBool
	kInteger
	kNumber // any number, integers included
	kString
	kArray
	kObject
	kAny = kNull | kBool | kInteger | kNumber | kString | kArray | kObject
)

var kindNames = map[string]kind{
	"null": kNull, "boolean": kBool, "integer": kInteger, "number": kNumber | kInteger,
	"string": kString, "array": kArray, "object": kObject,
}

type node struct {
	types kind
	never bool // the false schema

	enum []scalar

	min, max, exMin, exMax *float64
	minLen, maxLen         *int
	pattern                *regexp.Regexp

	items              *node
	minItems, maxItems *int

	props      map[string]*node
	required   []string
	additional *node // nil: anything allowed
}

type scalar struct {
	k kind
	s string
	f float64
	b bool
}

// Validator checks encoded JSON against one compiled schema. It is safe for
// concurrent use.
type Validator struct{ root *node }

// Compile compiles s. ok is false when s uses a keyword outside the
// supported subset; the caller must then validate some other way.
func Compile(s *jsonschema.Schema) (v *Validator, ok bool) {
	n, ok := compile(s, 0)
	if !ok {
		return nil, false
	}
	return &Validator{root: n}, true
}

func isEmpty(s *jsonschema.Schema) bool {
	_, n := unsupported(s)
	return n == 0 && s.Type == "" && s.Types == nil && s.Enum == nil && s.Minimum == nil && s.Maximum == nil &&
		s.ExclusiveMinimum == nil && s.ExclusiveMaximum == nil && s.MinLength == nil && s.MaxLength == nil &&
		s.Pattern == "" && s.Items == nil && s.MinItems == nil && s.MaxItems == nil && s.Required == nil &&
		s.Properties == nil && s.AdditionalProperties == nil && s.Not == nil
}

// unsupported counts keywords outside the subset (Not is handled by the
// caller, for the false schema only).
func unsupported(s *jsonschema.Schema) (string, int) {
	n := 0
	name := ""
	check := func(present bool, kw string) {
		if present {
			n++
			name = kw
		}
	}
	check(s.Ref != "" || s.DynamicRef != "" || s.Defs != nil || s.Definitions != nil, "$ref")
	check(s.Const != nil, "const")
	check(s.MultipleOf != nil, "multipleOf")
	check(s.PrefixItems != nil || s.ItemsArray != nil || s.AdditionalItems != nil || s.UnevaluatedItems != nil, "prefixItems")
	check(s.UniqueItems || s.Contains != nil || s.MinContains != nil || s.MaxContains != nil, "contains")
	check(s.MinProperties != nil || s.MaxProperties != nil || s.DependentRequired != nil, "minProperties")
	check(s.PatternProperties != nil || s.PropertyNames != nil || s.UnevaluatedProperties != nil, "patternProperties")
	check(s.AllOf != nil || s.AnyOf != nil || s.OneOf != nil || s.If != nil || s.Then != nil || s.Else != nil, "allOf")
	check(s.DependentSchemas != nil || s.DependencySchemas != nil || s.DependencyStrings != nil, "dependentSchemas")
	check(s.ContentSchema != nil || s.Extra != nil, "contentSchema")
	return name, n
}

const maxSchemaDepth = 32

func compile(s *jsonschema.Schema, depth int) (*node, bool) {
	if s == nil {
		return nil, true
	}
	if depth > maxSchemaDepth {
		return nil, false
	}
	if _, n := unsupported(s); n > 0 {
		return nil, false
	}
	if s.Not != nil {
		if !isEmpty(s.Not) {
			return nil, false
		}
		// {not: {}} rejects everything; with other keywords it is still false.
		return &node{never: true}, true
	}
	n := &node{types: kAny}
	if s.Type != "" || s.Types != nil {
		n.types = 0
		for _, t := range append([]string{s.Type}, s.Types...) {
			if t == "" {
				continue
			}
			k, ok := kindNames[t]
			if !ok {
				return nil, false
			}
			n.types |= k
		}
	}
	for _, e := range s.Enum {
		switch x := e.(type) {
		case nil:
			n.enum = append(n.enum, scalar{k: kNull})
		case bool:
			n.enum = append(n.enum, scalar{k: kBool, b: x})
		case string:
			n.enum = append(n.enum, scalar{k: kString, s: x})
		case float64:
			n.enum = append(n.enum, scalar{k: kNumber, f: x})
		case int:
			n.enum = append(n.enum, scalar{k: kNumber, f: float64(x)})
		case int64:
			n.enum = append(n.enum, scalar{k: kNumber, f: float64(x)})
		default:
			return nil, false
		}
	}
	if s.Enum != nil && len(s.Enum) == 0 {
		n.never = true
	}
	n.min, n.max, n.exMin, n.exMax = s.Minimum, s.Maximum, s.ExclusiveMinimum, s.ExclusiveMaximum
	n.minLen, n.maxLen = s.MinLength, s.MaxLength
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return nil, false
		}
		n.pattern = re
	}
	var ok bool
	if n.items, ok = compile(s.Items, depth+1); !ok {
		return nil, false
	}
	n.minItems, n.maxItems = s.MinItems, s.MaxItems
	if s.Properties != nil {
		n.props = make(map[string]*node, len(s.Properties))
		for name, ps := range s.Properties {
			if n.props[name], ok = compile(ps, depth+1); !ok {
				return nil, false
			}
		}
	}
	n.required = slices.Clone(s.Required)
	if n.additional, ok = compile(s.AdditionalProperties, depth+1); !ok {
		return nil, false
	}
	return n, true
}

// Error is a validation failure: where and why.
type Error struct {
	Pointer string // JSON Pointer of the offending value
	Reason  string
}

func (e *Error) Error() string {
	if e.Pointer == "" {
		return e.Reason
	}
	return e.Pointer + ": " + e.Reason
}

type state struct {
	dec     *jsontext.Decoder
	rd      bytes.Reader
	scratch []byte
	seen    []bool
	// path holds the member names and indexes down to the current value;
	// its buffers are reused across calls, so a valid call allocates none.
	path  [][]byte
	depth int
}

func (st *state) push(seg []byte) {
	if st.depth == len(st.path) {
		st.path = append(st.path, nil)
	}
	st.path[st.depth] = append(st.path[st.depth][:0], seg...)
	st.depth++
}

// fail builds an Error at the current path; pointers are only built on
// failure, so a valid call allocates none.
func (st *state) fail(format string, args ...any) error {
	var b strings.Builder
	for _, p := range st.path[:st.depth] {
		b.WriteByte('/')
		b.Write(p)
	}
	return &Error{Pointer: b.String(), Reason: fmt.Sprintf(format, args...)}
}

var states = sync.Pool{New: func() any {
	st := &state{}
	st.dec = jsontext.NewDecoder(&st.rd)
	return st
}}

// Validate checks that data is one JSON value valid against the schema.
func (v *Validator) Validate(data []byte) error {
	st := states.Get().(*state)
	defer states.Put(st)
	st.rd.Reset(data)
	st.dec.Reset(&st.rd)
	st.depth = 0
	if err := st.value(v.root); err != nil {
		return err
	}
	if _, err := st.dec.ReadToken(); err == nil {
		return &Error{Reason: "unexpected data after the JSON value"}
	} else if !errors.Is(err, io.EOF) {
		return syntax(err)
	}
	return nil
}

func syntax(err error) error { return &Error{Reason: "invalid JSON: " + err.Error()} }

func (st *state) value(n *node) error {
	k := st.dec.PeekKind()
	if k == 0 {
		_, err := st.dec.ReadToken()
		return syntax(err)
	}
	if n == nil {
		return st.skip()
	}
	if n.never {
		return st.fail("value not allowed")
	}
	switch k {
	case '{':
		return st.object(n)
	case '[':
		return st.array(n)
	}
	raw, err := st.dec.ReadValue()
	if err != nil {
		return syntax(err)
	}
	var sc scalar
	switch k {
	case 'n':
		sc.k = kNull
	case 't', 'f':
		sc.k, sc.b = kBool, k == 't'
	case '"':
		sc.k = kString
		if n.enum != nil || n.pattern != nil || n.minLen != nil || n.maxLen != nil {
			st.scratch, err = jsontext.AppendUnquote(st.scratch[:0], raw)
			if err != nil {
				return syntax(err)
			}
			sc.s = string(st.scratch)
		}
	case '0':
		sc.k = kNumber
		sc.f, err = strconv.ParseFloat(string(raw), 64)
		if err != nil || math.IsInf(sc.f, 0) {
			return st.fail("number out of range")
		}
		if sc.f == math.Trunc(sc.f) {
			sc.k = kInteger
		}
	}
	if n.types&sc.k == 0 {
		return st.fail("want %s, got %s", typeNames(n.types), typeNames(sc.k))
	}
	if n.enum != nil && !slices.ContainsFunc(n.enum, sc.equal) {
		return st.fail("value is not one of the allowed values")
	}
	// The checks are called only when a keyword needs them: value runs
	// for every argument of every call.
	switch sc.k {
	case kString:
		if n.minLen != nil || n.maxLen != nil || n.pattern != nil {
			return st.checkString(n, sc.s)
		}
	case kInteger, kNumber:
		if n.min != nil || n.max != nil || n.exMin != nil || n.exMax != nil {
			return st.checkNumber(n, sc.f)
		}
	}
	return nil
}

// checkString applies n's length and pattern keywords to s.
func (st *state) checkString(n *node, s string) error {
	if n.minLen != nil || n.maxLen != nil {
		l := utf8.RuneCountInString(s)
		if n.minLen != nil && l < *n.minLen {
			return st.fail("shorter than %d characters", *n.minLen)
		}
		if n.maxLen != nil && l > *n.maxLen {
			return st.fail("longer than %d characters", *n.maxLen)
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		return st.fail("does not match the pattern %s", n.pattern)
	}
	return nil
}

// checkNumber applies n's numeric bounds to f.
func (st *state) checkNumber(n *node, f float64) error {
	switch {
	case n.min != nil && f < *n.min:
		return st.fail("less than the minimum %v", *n.min)
	case n.max != nil && f > *n.max:
		return st.fail("greater than the maximum %v", *n.max)
	case n.exMin != nil && f <= *n.exMin:
		return st.fail("not greater than %v", *n.exMin)
	case n.exMax != nil && f >= *n.exMax:
		return st.fail("not less than %v", *n.exMax)
	}
	return nil
}

func (a scalar) equal(b scalar) bool {
	ak, bk := a.k, b.k
	if ak == kInteger {
		ak = kNumber
	}
	if bk == kInteger {
		bk = kNumber
	}
	if ak != bk {
		return false
	}
	switch ak {
	case kBool:
		return a.b == b.b
	case kString:
		return a.s == b.s
	case kNumber:
		return a.f == b.f
	}
	return true
}

func (st *state) object(n *node) error {
	if n.types&kObject == 0 {
		return st.fail("want %s, got object", typeNames(n.types))
	}
	if _, err := st.dec.ReadToken(); err != nil {
		return syntax(err)
	}
	base := len(st.seen)
	st.seen = append(st.seen, make([]bool, len(n.required))...)
	defer func() { st.seen = st.seen[:base] }()
	for st.dec.PeekKind() != '}' {
		raw, err := st.dec.ReadValue()
		if err != nil {
			return syntax(err)
		}
		name := raw[1 : len(raw)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			if st.scratch, err = jsontext.AppendUnquote(st.scratch[:0], raw); err != nil {
				return syntax(err)
			}
			name = st.scratch
		}
		for i, r := range n.required {
			if r == string(name) {
				st.seen[base+i] = true
			}
		}
		child, declared := n.props[string(name)]
		if !declared {
			if n.additional != nil && n.additional.never {
				return st.fail("unknown member %q", clip.Text(string(name)))
			}
			child = n.additional
		}
		st.push(name)
		if err := st.value(child); err != nil {
			return err
		}
		st.depth--
	}
	if _, err := st.dec.ReadToken(); err != nil {
		return syntax(err)
	}
	for i, r := range n.required {
		if !st.seen[base+i] {
			return st.fail("missing required member %q", r)
		}
	}
	return nil
}

func (st *state) array(n *node) error {
	if n.types&kArray == 0 {
		return st.fail("want %s, got array", typeNames(n.types))
	}
	if _, err := st.dec.ReadToken(); err != nil {
		return syntax(err)
	}
	count := 0
	var index [20]byte
	for st.dec.PeekKind() != ']' {
		st.push(strconv.AppendInt(index[:0], int64(count), 10))
		if err := st.value(n.items); err != nil {
			return err
		}
		st.depth--
		count++
	}
	if _, err := st.dec.ReadToken(); err != nil {
		return syntax(err)
	}
	if n.minItems != nil && count < *n.minItems {
		return st.fail("fewer than %d items", *n.minItems)
	}
	if n.maxItems != nil && count > *n.maxItems {
		return st.fail("more than %d items", *n.maxItems)
	}
	return nil
}

func (st *state) skip() error {
	if err := st.dec.SkipValue(); err != nil {
		return syntax(err)
	}
	return nil
}

func typeNames(k kind) string {
	var out []string
	for _, name := range []string{"null", "boolean", "integer", "number", "string", "array", "object"} {
		bit := kindNames[name]
		if name == "number" {
			bit = kNumber
		}
		if k&bit != 0 {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return "nothing"
	}
	if len(out) == 1 {
		return out[0]
	}
	return fmt.Sprint(out)
}
