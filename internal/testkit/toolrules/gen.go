package toolrules

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// A Pair is one set of arguments in two forms: Orig as the tool's own
// schema means it, Sent as a model constrained by a strict schema writes
// it. With nullOptional (OpenAI), an optional property left out of Orig is
// null in Sent (every property is required there); otherwise the two are
// the same.
type Pair struct {
	Orig, Sent any
	// What names how the pair was made, for a failure's message.
	What string
}

// Pairs generates n pairs from schema (decoded JSON): values built from
// it, most valid, and each mutated once (a required member dropped, an
// undeclared one added, a value of another type, a null, a string or a
// number pushed past a bound), so that both sides of each keyword are
// tried.
func Pairs(schema map[string]any, rng *rand.Rand, n int, nullOptional bool) []Pair {
	g := &gen{root: schema, rng: rng, nullOptional: nullOptional}
	var out []Pair
	for i := 0; len(out) < n && i < 4*n; i++ {
		o, s := g.value(schema, 0)
		out = append(out, Pair{Orig: o, Sent: s, What: "generated"})
		if len(out) < n {
			mo, ms, what := g.mutate(clone(o), clone(s), schema, 0)
			out = append(out, Pair{Orig: mo, Sent: ms, What: what})
		}
	}
	return out
}

type gen struct {
	root         map[string]any
	rng          *rand.Rand
	nullOptional bool
}

func (g *gen) resolve(n map[string]any, depth int) map[string]any {
	for depth < 16 {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n
		}
		var next any
		if ref == "#" {
			next = g.root
		}
		for _, key := range []string{"$defs", "definitions"} {
			if name, ok := strings.CutPrefix(ref, "#/"+key+"/"); ok {
				m, _ := g.root[key].(map[string]any)
				next = m[name]
			}
		}
		m, ok := next.(map[string]any)
		if !ok {
			return nil
		}
		n, depth = m, depth+1
	}
	return nil
}

// value builds a value for s, in both forms.
func (g *gen) value(s any, depth int) (any, any) {
	n, _ := s.(map[string]any)
	if n = g.resolve(n, 0); n == nil || depth > 6 {
		return nil, nil
	}
	if e, ok := n["enum"].([]any); ok && len(e) > 0 {
		v := e[g.rng.IntN(len(e))]
		return v, v
	}
	if c, ok := n["const"]; ok {
		return c, c
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if l, ok := n[key].([]any); ok && len(l) > 0 {
			return g.value(l[g.rng.IntN(len(l))], depth)
		}
	}
	types := strs(n["type"])
	if len(types) == 0 {
		types = []string{"string"}
	}
	switch t := types[g.rng.IntN(len(types))]; t {
	case "object":
		return g.object(n, depth)
	case "array":
		k := g.rng.IntN(3)
		if m, ok := n["minItems"].(float64); ok {
			k = max(k, int(m))
		}
		o, s := []any{}, []any{}
		for range k {
			a, b := g.value(n["items"], depth+1)
			o, s = append(o, a), append(s, b)
		}
		return o, s
	case "string":
		v := g.str(n)
		return v, v
	case "integer":
		v := float64([]int{0, 1, 2, 7, 100, -1}[g.rng.IntN(6)])
		return v, v
	case "number":
		v := []float64{0, 0.5, 3, -2.25}[g.rng.IntN(4)]
		return v, v
	case "boolean":
		v := g.rng.IntN(2) == 0
		return v, v
	}
	return nil, nil
}

func (g *gen) str(n map[string]any) string {
	cands := []string{"a.txt", "x", "", "release.notes", "TODO", "ab_c-1", strings.Repeat("z", 130)}
	v := cands[g.rng.IntN(len(cands))]
	if m, ok := n["minLength"].(float64); ok && len(v) < int(m) {
		v += strings.Repeat("a", int(m)-len(v))
	}
	if m, ok := n["maxLength"].(float64); ok && len(v) > int(m) {
		v = v[:int(m)]
	}
	return v
}

func (g *gen) object(n map[string]any, depth int) (any, any) {
	props, _ := n["properties"].(map[string]any)
	req := strs(n["required"])
	o, s := map[string]any{}, map[string]any{}
	for _, name := range sorted(props) {
		if !slices.Contains(req, name) && g.rng.IntN(2) == 0 {
			if g.nullOptional {
				s[name] = nil
			}
			continue
		}
		o[name], s[name] = g.value(props[name], depth+1)
	}
	return o, s
}

// mutate changes one place of a value (both forms alike) in a way a
// schema may refuse, and says how.
func (g *gen) mutate(o, s any, schema any, depth int) (any, any, string) {
	n, _ := schema.(map[string]any)
	n = g.resolve(n, 0)
	om, ok1 := o.(map[string]any)
	sm, ok2 := s.(map[string]any)
	if ok1 && ok2 && n != nil {
		props, _ := n["properties"].(map[string]any)
		present := sorted(om)
		if len(present) > 0 && depth < 4 && g.rng.IntN(3) == 0 {
			name := present[g.rng.IntN(len(present))]
			mo, ms, what := g.mutate(om[name], sm[name], props[name], depth+1)
			om[name], sm[name] = mo, ms
			return om, sm, "/" + name + what
		}
		switch g.rng.IntN(4) {
		case 0:
			if req := strs(n["required"]); len(req) > 0 {
				name := req[g.rng.IntN(len(req))]
				delete(om, name)
				delete(sm, name)
				return om, sm, ": required " + name + " dropped"
			}
		case 1:
			om["zz_undeclared"], sm["zz_undeclared"] = 1.0, 1.0
			return om, sm, ": an undeclared member added"
		case 2:
			// Under nullOptional a null in an optional member means it
			// was left out, which generated values try already: null
			// goes in a required one.
			cands := present
			if g.nullOptional {
				cands = slices.DeleteFunc(slices.Clone(present), func(m string) bool { return !slices.Contains(strs(n["required"]), m) })
			}
			if len(cands) > 0 {
				name := cands[g.rng.IntN(len(cands))]
				om[name], sm[name] = nil, nil
				return om, sm, ": " + name + " set to null"
			}
		}
		if len(present) > 0 {
			name := present[g.rng.IntN(len(present))]
			v := otherType(om[name])
			om[name], sm[name] = v, v
			return om, sm, fmt.Sprintf(": %s given %v", name, v)
		}
		return "not an object", "not an object", ": a string for the object"
	}
	oa, ok1 := o.([]any)
	sa, ok2 := s.([]any)
	if ok1 && ok2 && len(oa) > 0 && n != nil {
		i := g.rng.IntN(len(oa))
		mo, ms, what := g.mutate(oa[i], sa[i], n["items"], depth+1)
		oa[i], sa[i] = mo, ms
		return oa, sa, fmt.Sprintf("/%d%s", i, what)
	}
	if str, ok := o.(string); ok {
		v := str + strings.Repeat("Q!", 70)
		return v, v, ": a long string"
	}
	if f, ok := o.(float64); ok {
		v := f*1000 + 0.5
		return v, v, ": a fraction"
	}
	v := otherType(o)
	return v, v, fmt.Sprintf(": %v instead", v)
}

func otherType(v any) any {
	switch v.(type) {
	case string:
		return 12.0
	case float64:
		return "12"
	case bool:
		return "true"
	case []any:
		return map[string]any{}
	case map[string]any:
		return []any{}
	}
	return "x"
}

func clone(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}
