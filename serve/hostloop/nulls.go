package hostloop

import (
	"bytes"
	"context"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
)

// maxNullDepth bounds how deep dropNulls follows a value; deeper values
// are passed on as they are (the kernel's validation has the last word).
const maxNullDepth = 64

// dropNulls undoes strict mode's emulation of optional properties: in v,
// valid or not against s (a subschema of root), it removes each member
// whose value is null where s leaves the property optional and does not
// admit null, which is how the strict schema lets a model leave it out.
// Members are rewritten token by token, not decoded into Go values, so
// every number keeps its digits. Where a union leaves unclear which branch a value
// follows, its nulls stay, and the kernel refuses them if they are wrong.
// It reports whether it changed v, and fails once ctx is done.
func dropNulls(ctx context.Context, root, s *jsonschema.Schema, v jsontext.Value, depth int) (jsontext.Value, bool, error) {
	if err := ctx.Err(); err != nil {
		return v, false, err
	}
	s = branchFor(root, s, v)
	if s == nil || depth > maxNullDepth {
		return v, false, nil
	}
	switch v.Kind() {
	case '{':
		return dropInObject(ctx, root, s, v, depth)
	case '[':
		if s.Items == nil {
			return v, false, nil
		}
		return rewrite(v, func(_ string, m jsontext.Value) (jsontext.Value, bool, bool, error) {
			out, changed, err := dropNulls(ctx, root, s.Items, m, depth+1)
			return out, true, changed, err
		})
	}
	return v, false, nil
}

func dropInObject(ctx context.Context, root, s *jsonschema.Schema, v jsontext.Value, depth int) (jsontext.Value, bool, error) {
	return rewrite(v, func(name string, m jsontext.Value) (jsontext.Value, bool, bool, error) {
		p, ok := s.Properties[name]
		if !ok {
			return m, true, false, nil
		}
		if m.Kind() == 'n' && !slices.Contains(s.Required, name) && !admitsNull(root, p) {
			return nil, false, true, nil
		}
		out, changed, err := dropNulls(ctx, root, p, m, depth+1)
		return out, true, changed, err
	})
}

// branchFor is the subschema v follows in s: s itself, its $ref's target,
// or the one branch of its anyOf or oneOf (through nested unions and
// references) whose shape v has; nil when that is unclear. Each subschema
// is visited once, so references that fan out cost their size, not their
// paths.
func branchFor(root, s *jsonschema.Schema, v jsontext.Value) *jsonschema.Schema {
	seen := map[*jsonschema.Schema]bool{}
	var leaves []*jsonschema.Schema
	union := false
	var visit func(s *jsonschema.Schema)
	visit = func(s *jsonschema.Schema) {
		for s != nil && s.Ref != "" && !seen[s] {
			seen[s] = true
			s = resolveRef(root, s.Ref)
		}
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		branches := append(slices.Clone(s.AnyOf), s.OneOf...)
		union = union || len(branches) > 0
		if len(branches) == 0 {
			leaves = append(leaves, s)
		}
		for _, b := range branches {
			visit(b)
		}
	}
	visit(s)
	if !union {
		if len(leaves) == 0 {
			return nil // a reference that names nothing, or only itself
		}
		return leaves[0] // s, or what its references name
	}
	var found *jsonschema.Schema
	for _, b := range leaves {
		if shapeOf(b, v) {
			if found != nil {
				return nil
			}
			found = b
		}
	}
	return found
}

// shapeOf reports whether v has the shape s describes, as far as nulls
// matter: an object whose member names s declares, or an array where s
// takes one.
func shapeOf(s *jsonschema.Schema, v jsontext.Value) bool {
	switch v.Kind() {
	case '{':
		if !hasType(s, "object") && s.Properties == nil {
			return false
		}
		ok := true
		rewrite(v, func(name string, m jsontext.Value) (jsontext.Value, bool, bool, error) {
			if _, declared := s.Properties[name]; !declared {
				ok = false
			}
			return m, true, false, nil
		})
		return ok && !slices.ContainsFunc(s.Required, func(n string) bool { return !hasMember(v, n) })
	case '[':
		return hasType(s, "array")
	}
	return false
}

func hasMember(v jsontext.Value, name string) bool {
	found := false
	rewrite(v, func(n string, m jsontext.Value) (jsontext.Value, bool, bool, error) {
		found = found || n == name
		return m, true, false, nil
	})
	return found
}

// rewrite calls f on each member of the object v (with its name) or
// element of the array v (name ""), and writes back what f keeps. f
// returns the new value, whether to keep it, and whether it changed.
func rewrite(v jsontext.Value, f func(name string, m jsontext.Value) (jsontext.Value, bool, bool, error)) (jsontext.Value, bool, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	var buf bytes.Buffer
	enc := jsontext.NewEncoder(&buf)
	open, err := dec.ReadToken()
	if err != nil {
		return v, false, err
	}
	if err := enc.WriteToken(open); err != nil {
		return v, false, err
	}
	isObject, changed := open.Kind() == '{', false
	for dec.PeekKind() != '}' && dec.PeekKind() != ']' {
		var name string
		if isObject {
			tok, err := dec.ReadToken()
			if err != nil {
				return v, false, err
			}
			name = tok.String()
		}
		m, err := dec.ReadValue()
		if err != nil {
			return v, false, err
		}
		out, keep, ch, err := f(name, m)
		if err != nil {
			return v, false, err
		}
		changed = changed || ch
		if !keep {
			continue
		}
		if isObject {
			if err := enc.WriteToken(jsontext.String(name)); err != nil {
				return v, false, err
			}
		}
		if err := enc.WriteValue(out); err != nil {
			return v, false, err
		}
	}
	closing, err := dec.ReadToken()
	if err != nil {
		return v, false, err
	}
	if err := enc.WriteToken(closing); err != nil {
		return v, false, err
	}
	if !changed {
		return v, false, nil
	}
	return bytes.TrimSpace(buf.Bytes()), true, nil
}
