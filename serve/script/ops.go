package script

import (
	"errors"
	"fmt"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The operations of the rewritten script: each takes its operands with
// their labels and gives a result labelled with what it depends on.

// binary is x op y.
func (tr *tracker) binary(op syntax.Token, x, y starlark.Value) (starlark.Value, error) {
	switch op {
	case syntax.EQL, syntax.NEQ, syntax.LT, syntax.GT, syntax.LE, syntax.GE:
		// A comparison reads every element.
		xv, xl, err := tr.flat(x)
		if err != nil {
			return nil, err
		}
		yv, yl, err := tr.flat(y)
		if err != nil {
			return nil, err
		}
		ok, err := starlark.Compare(op, xv, yv)
		if err != nil {
			return nil, err
		}
		return tr.wrap(starlark.Bool(ok), tr.ls.join(xl, yl)), nil
	case syntax.IN, syntax.NOT_IN:
		return tr.membership(op, x, y)
	case syntax.PERCENT:
		if s, _, _ := tr.top(x); isString(s) {
			// Formatting reads every element of its operand.
			xv, xl, err := tr.flat(x)
			if err != nil {
				return nil, err
			}
			yv, yl, err := tr.flat(y)
			if err != nil {
				return nil, err
			}
			z, err := starlark.Binary(op, xv, yv)
			if err != nil {
				return nil, err
			}
			return tr.wrap(z, tr.ls.join(xl, yl)), nil
		}
	}
	// Concatenation, repetition and union hold the elements as they are:
	// the result's label is its operands'.
	xv, xl, err := tr.top(x)
	if err != nil {
		return nil, err
	}
	yv, yl, err := tr.top(y)
	if err != nil {
		return nil, err
	}
	z, err := starlark.Binary(op, xv, yv)
	if err != nil {
		return nil, err
	}
	return tr.wrap(z, tr.ls.join(xl, yl)), nil
}

func isString(v starlark.Value) bool {
	_, ok := v.(starlark.String)
	return ok
}

// membership is x in y: a mapping's or set's keys are never labelled, a
// sequence's elements are compared.
func (tr *tracker) membership(op syntax.Token, x, y starlark.Value) (starlark.Value, error) {
	xv, xl, err := tr.flat(x)
	if err != nil {
		return nil, err
	}
	yv, yl, err := tr.top(y)
	if err != nil {
		return nil, err
	}
	switch yv.(type) {
	case *starlark.Dict, *starlark.Set, starlark.String, starlark.Bytes:
	default:
		if yv, yl, err = tr.flat(y); err != nil {
			return nil, err
		}
	}
	z, err := starlark.Binary(op, xv, yv)
	if err != nil {
		return nil, err
	}
	return tr.wrap(z, tr.ls.join(xl, yl)), nil
}

// unary is op x for -, + and ~.
func (tr *tracker) unary(op syntax.Token, x starlark.Value) (starlark.Value, error) {
	xv, xl, err := tr.top(x)
	if err != nil {
		return nil, err
	}
	z, err := starlark.Unary(op, xv)
	if err != nil {
		return nil, err
	}
	return tr.wrap(z, xl), nil
}

// truth is x's truth and what it depends on: a container's is its length.
func (tr *tracker) truth(x starlark.Value) (bool, *label, error) {
	xv, xl, err := tr.top(x)
	if err != nil {
		return false, nil, err
	}
	return bool(xv.Truth()), xl, nil
}

// index is x[y].
func (tr *tracker) index(x, y starlark.Value) (starlark.Value, error) {
	xv, xl, err := tr.top(x)
	if err != nil {
		return nil, err
	}
	yv, yl, err := tr.flat(y)
	if err != nil {
		return nil, err
	}
	z, err := getIndex(xv, yv)
	if err != nil {
		return nil, err
	}
	return tr.wrap(z, tr.ls.join(xl, yl)), nil
}

// getIndex is x[y] as the interpreter computes it.
func getIndex(x, y starlark.Value) (starlark.Value, error) {
	switch x := x.(type) {
	case starlark.Mapping:
		z, found, err := x.Get(y)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("key %v not in %s", y, x.Type())
		}
		return z, nil
	case starlark.Indexable:
		n := x.Len()
		i, err := starlark.AsInt32(y)
		if err != nil {
			return nil, fmt.Errorf("%s index: %s", x.Type(), err)
		}
		orig := i
		if i < 0 {
			i += n
		}
		if i < 0 || i >= n {
			return nil, outOfRange(orig, n, x)
		}
		return x.Index(i), nil
	}
	return nil, fmt.Errorf("unhandled index operation %s[%s]", x.Type(), y.Type())
}

func outOfRange(i, n int, x starlark.Value) error {
	if n == 0 {
		return fmt.Errorf("index %d out of range: empty %s", i, x.Type())
	}
	return fmt.Errorf("%s index %d out of range [%d:%d]", x.Type(), i, -n, n-1)
}

// slice is x[lo:hi:step]; absent bounds are None.
func (tr *tracker) slice(x, lo, hi, step starlark.Value) (starlark.Value, error) {
	xv, l, err := tr.top(x)
	if err != nil {
		return nil, err
	}
	var bounds [3]starlark.Value
	for i, b := range []starlark.Value{lo, hi, step} {
		v, bl, err := tr.flat(b)
		if err != nil {
			return nil, err
		}
		bounds[i], l = v, tr.ls.join(l, bl)
	}
	z, err := sliceOf(xv, bounds[0], bounds[1], bounds[2])
	if err != nil {
		return nil, err
	}
	return tr.wrap(z, l), nil
}

// sliceOf is x[lo:hi:step] by the rules of the language spec.
func sliceOf(x, lo, hi, step starlark.Value) (starlark.Value, error) {
	s, ok := x.(starlark.Sliceable)
	if !ok {
		return nil, fmt.Errorf("invalid slice operand %s", x.Type())
	}
	n := s.Len()
	st := 1
	if step != starlark.None {
		var err error
		if st, err = starlark.AsInt32(step); err != nil {
			return nil, fmt.Errorf("invalid slice step: %s", err)
		}
		if st == 0 {
			return nil, fmt.Errorf("zero is not a valid slice step")
		}
	}
	var start, end int
	if st > 0 {
		var err error
		if start, err = clampIndex(lo, n, 0, 0, n); err != nil {
			return nil, fmt.Errorf("invalid start index: %s", err)
		}
		if end, err = clampIndex(hi, n, n, 0, n); err != nil {
			return nil, fmt.Errorf("invalid end index: %s", err)
		}
		end = max(end, start)
	} else {
		var err error
		if start, err = clampIndex(lo, n, n-1, -1, n-1); err != nil {
			return nil, fmt.Errorf("invalid start index: %s", err)
		}
		if end, err = clampIndex(hi, n, -1, -1, n-1); err != nil {
			return nil, fmt.Errorf("invalid end index: %s", err)
		}
		start = max(start, end)
	}
	return s.Slice(start, end, st), nil
}

// clampIndex is bound v (None: def) for a sequence of n: a negative
// index counts from the end, and the result lies in [lo, hi].
func clampIndex(v starlark.Value, n, def, lo, hi int) (int, error) {
	if v == starlark.None {
		return def, nil
	}
	i, err := starlark.AsInt32(v)
	if err != nil {
		return 0, err
	}
	if i < 0 {
		i += n
	}
	return min(max(i, lo), hi), nil
}

// attr is x.name.
func (tr *tracker) attr(x starlark.Value, name string) (starlark.Value, error) {
	xv, xl, err := tr.top(x)
	if err != nil {
		return nil, err
	}
	z, err := getAttr(xv, name)
	if err != nil {
		return nil, err
	}
	return tr.wrap(z, xl), nil
}

// getAttr is x.name as the interpreter computes it, less its spelling
// hint.
func getAttr(x starlark.Value, name string) (starlark.Value, error) {
	h, ok := x.(starlark.HasAttrs)
	if !ok {
		return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
	}
	v, err := h.Attr(name)
	if err != nil {
		if nsa, ok := err.(starlark.NoSuchAttrError); ok {
			return nil, fmt.Errorf("%s", string(nsa))
		}
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
	}
	return v, nil
}

// mutated records that container v changed under control pc and by a
// choice that depended on l.
func (tr *tracker) mutated(v starlark.Value, l *label) {
	tr.raise(v, tr.ls.join(tr.pc(), l))
}

// setIndex is x[y] = z; z is held as it is, labelled.
func (tr *tracker) setIndex(x, y, z starlark.Value) error {
	if _, ok := z.(unbound); ok {
		return errUnbound
	}
	xv, _, err := tr.top(x)
	if err != nil {
		return err
	}
	yv, yl, err := tr.flat(y)
	if err != nil {
		return err
	}
	switch c := xv.(type) {
	case starlark.HasSetKey:
		if err := c.SetKey(yv, z); err != nil {
			return err
		}
	case starlark.HasSetIndex:
		n := c.Len()
		i, err := starlark.AsInt32(yv)
		if err != nil {
			return err
		}
		orig := i
		if i < 0 {
			i += n
		}
		if i < 0 || i >= n {
			return outOfRange(orig, n, c)
		}
		if err := c.SetIndex(i, z); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s value does not support item assignment", xv.Type())
	}
	tr.mutated(xv, yl)
	return nil
}

// setField is x.name = z.
func (tr *tracker) setField(x starlark.Value, name string, z starlark.Value) error {
	xv, _, err := tr.top(x)
	if err != nil {
		return err
	}
	if s, ok := xv.(starlark.HasSetField); ok {
		if err := s.SetField(name, z); err != nil {
			return err
		}
		tr.mutated(xv, nil)
		return nil
	}
	return fmt.Errorf("can't assign to .%s field of %s", name, xv.Type())
}

// augmented is x op= y: in place for a list (x += y extends it).
func (tr *tracker) augmented(op syntax.Token, x, y starlark.Value) (starlark.Value, error) {
	if op == syntax.PLUS_EQ {
		if l, ok := x.(*starlark.List); ok {
			yv, yl, err := tr.top(y)
			if err != nil {
				return nil, err
			}
			it, ok := yv.(starlark.Iterable)
			if !ok {
				return nil, fmt.Errorf("unknown binary op: %s + %s", x.Type(), yv.Type())
			}
			if err := extendable(l); err != nil {
				return nil, err
			}
			if err := extend(l, it); err != nil {
				return nil, err
			}
			tr.mutated(l, yl)
			return l, nil
		}
	}
	return tr.binary(binaryOf[op], x, y)
}

// extendable fails as the interpreter's += does on a list that cannot
// change (frozen, or being iterated over), even when nothing would be
// added. go.starlark.net exports no such check, so it is made with a
// change that changes nothing.
func extendable(l *starlark.List) error {
	var err error
	if l.Len() > 0 {
		err = l.SetIndex(0, l.Index(0))
	} else {
		err = l.Clear()
	}
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), "frozen"):
		return errors.New("cannot apply += to frozen list")
	}
	return errors.New("cannot apply += to list during iteration")
}

// extend appends it's elements to l, as += does (l += l doubles l).
func extend(l *starlark.List, it starlark.Iterable) error {
	var elems []starlark.Value
	iter := it.Iterate()
	var e starlark.Value
	for iter.Next(&e) {
		elems = append(elems, e)
	}
	iter.Done()
	for _, e := range elems {
		if err := l.Append(e); err != nil {
			return err
		}
	}
	return nil
}

// binaryOf maps an augmented assignment to its operator.
var binaryOf = map[syntax.Token]syntax.Token{
	syntax.PLUS_EQ: syntax.PLUS, syntax.MINUS_EQ: syntax.MINUS, syntax.STAR_EQ: syntax.STAR,
	syntax.SLASH_EQ: syntax.SLASH, syntax.SLASHSLASH_EQ: syntax.SLASHSLASH, syntax.PERCENT_EQ: syntax.PERCENT,
	syntax.AMP_EQ: syntax.AMP, syntax.PIPE_EQ: syntax.PIPE, syntax.CIRCUMFLEX_EQ: syntax.CIRCUMFLEX,
	syntax.LTLT_EQ: syntax.LTLT, syntax.GTGT_EQ: syntax.GTGT,
}

// unpack is x's n elements, each labelled, as a plain tuple the
// interpreter can assign from.
func (tr *tracker) unpack(x starlark.Value, n int) (starlark.Tuple, error) {
	xv, l, err := tr.top(x)
	if err != nil {
		return nil, err
	}
	it, ok := xv.(starlark.Iterable)
	if !ok {
		return nil, fmt.Errorf("got %s in sequence assignment", xv.Type())
	}
	out := make(starlark.Tuple, 0, n)
	iter := it.Iterate()
	defer iter.Done()
	var e starlark.Value
	for iter.Next(&e) {
		if len(out) == n {
			return nil, fmt.Errorf("too many values to unpack (got %d, want %d)", starlark.Len(xv), n)
		}
		out = append(out, tr.wrap(e, l))
	}
	if len(out) < n {
		return nil, fmt.Errorf("too few values to unpack (got %d, want %d)", len(out), n)
	}
	return out, nil
}

// dictOf is {k: v, ...} for a literal with computed keys: keys are held
// plain, their labels the dict's.
func (tr *tracker) dictOf(pairs starlark.Tuple) (starlark.Value, error) {
	d := starlark.NewDict(len(pairs) / 2)
	var l *label
	for i := 0; i+1 < len(pairs); i += 2 {
		k, kl, err := tr.flat(pairs[i])
		if err != nil {
			return nil, err
		}
		if _, ok := pairs[i+1].(unbound); ok {
			return nil, errUnbound
		}
		if _, found, _ := d.Get(k); found {
			return nil, fmt.Errorf("duplicate key: %v", k)
		}
		if err := d.SetKey(k, pairs[i+1]); err != nil {
			return nil, err
		}
		l = tr.ls.join(l, kl)
	}
	return tr.wrap(d, l), nil
}
