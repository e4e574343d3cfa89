package script

import (
	"fmt"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// helpers are the rewritten script's predeclared helpers, bound to tr.
// Their arguments are what the rewriter emits, so they are read without
// the checks a script's own call would need.
func (tr *tracker) helpers() starlark.StringDict {
	type fn = func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error)
	b := func(name string, f fn) *starlark.Builtin {
		return starlark.NewBuiltin(name, func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			return f(th, args, kwargs)
		})
	}
	id := func(v starlark.Value) int32 { i, _ := starlark.AsInt32(v); return int32(i) }
	tok := func(v starlark.Value) syntax.Token { return syntax.Token(id(v)) }
	name := func(v starlark.Value) string { s, _ := starlark.AsString(v); return s }
	boolOf := func(ok bool, l *label, err error) (starlark.Value, *label, error) { return starlark.Bool(ok), l, err }
	return starlark.StringDict{
		hNone:    starlark.None,
		hUnbound: unboundValue,
		hBin: b(hBin, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return tr.binary(tok(a[0]), a[1], a[2])
		}),
		hUn: b(hUn, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return tr.unary(tok(a[0]), a[1])
		}),
		hNot: b(hNot, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			ok, l, err := tr.truth(a[0])
			return tr.wrap(starlark.Bool(!ok), l), err
		}),
		hIdx: b(hIdx, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return tr.index(a[0], a[1])
		}),
		hSlc: b(hSlc, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return tr.slice(a[0], a[1], a[2], a[3])
		}),
		hDot: b(hDot, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return tr.attr(a[0], name(a[1]))
		}),
		hSetIdx: b(hSetIdx, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return starlark.None, tr.setIndex(a[0], a[1], a[2])
		}),
		hSetDot: b(hSetDot, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return starlark.None, tr.setField(a[0], name(a[1]), a[2])
		}),
		hAug: b(hAug, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return tr.augmented(tok(a[0]), a[1], a[2])
		}),
		hUnp: b(hUnp, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			n, _ := starlark.AsInt32(a[1])
			return tr.unpack(a[0], n)
		}),
		hDict: b(hDict, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return tr.dictOf(a)
		}),
		hCall: b(hCall, func(th *starlark.Thread, a starlark.Tuple, kw []starlark.Tuple) (starlark.Value, error) {
			return tr.call(th, a[0], a[1:], kw)
		}),
		hMeth: b(hMeth, func(th *starlark.Thread, a starlark.Tuple, kw []starlark.Tuple) (starlark.Value, error) {
			return tr.methodCall(th, a[0], name(a[1]), a[2:], kw)
		}),
		hCallV: b(hCallV, func(th *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			args, kwargs, err := tr.spread(a[1].(starlark.Tuple), a[2], a[3].(*starlark.Dict), a[4])
			if err != nil {
				return nil, err
			}
			return tr.call(th, a[0], args, kwargs)
		}),
		hIf: b(hIf, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			ok, l, err := tr.truth(a[1])
			tr.enter(id(a[0]), l)
			return starlark.Bool(ok), err
		}),
		hFor: b(hFor, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			it, l, err := tr.iterable(a[1])
			if err != nil {
				return nil, err
			}
			tr.enter(id(a[0]), l)
			return it, nil
		}),
		hWhile: b(hWhile, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			ok, l, err := tr.truth(a[1])
			tr.joinRegion(id(a[0]), l)
			return starlark.Bool(ok), err
		}),
		hEnd: b(hEnd, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			out, err := tr.leave(id(a[0]), a[1:])
			if err != nil {
				return nil, err
			}
			switch len(out) {
			case 0:
				return starlark.None, nil
			case 1:
				return out[0], nil
			}
			return out, nil
		}),
		hEsc: b(hEsc, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return starlark.None, tr.escape(id(a[0]))
		}),
		hFn: b(hFn, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			tr.enter(id(a[0]), nil)
			return starlark.None, nil
		}),
		hRet: b(hRet, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return tr.ret(id(a[0]), a[1], a[2:])
		}),
		hCondQ: b(hCondQ, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			ok, l, err := tr.truth(a[1])
			tr.enter(id(a[0]), l)
			return starlark.Bool(ok), err
		}),
		hLogQ: b(hLogQ, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			v, l, err := tr.top(a[1])
			tr.enter(id(a[0]), l)
			return v, err
		}),
		hCondX: b(hCondX, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return tr.leaveWith(id(a[0]), a[1], a[2:])
		}),
		hLogX: b(hLogX, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return tr.leaveWith(id(a[0]), a[1], a[2:])
		}),
		hCompI: b(hCompI, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			it, l, err := tr.iterable(a[1])
			if err != nil {
				return nil, err
			}
			tr.joinRegion(id(a[0]), l)
			return it, nil
		}),
		hCompF: b(hCompF, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			v, l, err := boolOf(tr.truth(a[1]))
			tr.joinRegion(id(a[0]), l)
			return v, err
		}),
		hCompL: b(hCompL, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return tr.leaveWith(id(a[0]), a[1], a[2:])
		}),
		hCompD: b(hCompD, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			d, err := tr.dictFromPairs(a[1].(*starlark.List))
			if err != nil {
				return nil, err
			}
			return tr.leaveWith(id(a[0]), d, a[2:])
		}),
		hCompS: b(hCompS, func(_ *starlark.Thread, a starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			s, err := tr.setFrom(a[1].(*starlark.List))
			if err != nil {
				return nil, err
			}
			return tr.leaveWith(id(a[0]), s, a[2:])
		}),
	}
}

// leaveWith pops region id, relabels its receivers and returns v
// labelled with the region's control.
func (tr *tracker) leaveWith(id int32, v starlark.Value, recv starlark.Tuple) (starlark.Value, error) {
	n := len(tr.frames)
	if n == 0 || tr.frames[n-1].region != id {
		return nil, fmt.Errorf("internal: region %d ends out of order", id)
	}
	l := tr.frames[n-1].own
	tr.frames = tr.frames[:n-1]
	if _, err := tr.settle(id, l, recv); err != nil {
		return nil, err
	}
	return tr.wrap(v, l), nil
}

// ret returns from a function that returns early: the frames above and
// including its own pop, and the value and the function's receivers take
// what they depended on.
func (tr *tracker) ret(id int32, v starlark.Value, recv starlark.Tuple) (starlark.Value, error) {
	i := tr.find(id)
	if i < 0 {
		return v, nil
	}
	var l *label
	for _, f := range tr.frames[i:] {
		l = tr.ls.join(l, f.own)
	}
	tr.frames = tr.frames[:i]
	if _, err := tr.settle(id, l, recv); err != nil {
		return nil, err
	}
	return tr.wrap(v, l), nil
}

// spread is the arguments of f(*star, **starstar) with their labels: a
// labelled sequence's elements take its label.
func (tr *tracker) spread(pos starlark.Tuple, star starlark.Value, named *starlark.Dict, starstar starlark.Value) (starlark.Tuple, []starlark.Tuple, error) {
	args := append(starlark.Tuple{}, pos...)
	if star != starlark.None {
		it, _, err := tr.iterable(star)
		if err != nil {
			return nil, nil, err
		}
		iter := it.(starlark.Iterable).Iterate()
		defer iter.Done()
		var e starlark.Value
		for iter.Next(&e) {
			args = append(args, e)
		}
	}
	var kwargs []starlark.Tuple
	for _, kv := range named.Items() {
		kwargs = append(kwargs, starlark.Tuple{kv[0], kv[1]})
	}
	if starstar != starlark.None {
		v, l, err := tr.top(starstar)
		if err != nil {
			return nil, nil, err
		}
		m, ok := v.(*starlark.Dict)
		if !ok {
			return nil, nil, fmt.Errorf("argument after ** must be a mapping, not %s", v.Type())
		}
		for _, kv := range m.Items() {
			if _, ok := kv[0].(starlark.String); !ok {
				return nil, nil, fmt.Errorf("keywords must be strings, not %s", kv[0].Type())
			}
			kwargs = append(kwargs, starlark.Tuple{kv[0], tr.wrap(kv[1], l)})
		}
	}
	return args, kwargs, nil
}

// dictFromPairs is a dict comprehension's result: keys plain, their
// labels the dict's.
func (tr *tracker) dictFromPairs(pairs *starlark.List) (starlark.Value, error) {
	d := starlark.NewDict(pairs.Len())
	var l *label
	for i := range pairs.Len() {
		kv := pairs.Index(i).(starlark.Tuple)
		k, kl, err := tr.flat(kv[0])
		if err != nil {
			return nil, err
		}
		if err := d.SetKey(k, kv[1]); err != nil {
			return nil, err
		}
		l = tr.ls.join(l, kl)
	}
	return tr.wrap(d, l), nil
}

// setFrom is a set comprehension's result.
func (tr *tracker) setFrom(elems *starlark.List) (starlark.Value, error) {
	s := new(starlark.Set)
	var l *label
	for i := range elems.Len() {
		e, el, err := tr.flat(elems.Index(i))
		if err != nil {
			return nil, err
		}
		if err := s.Insert(e); err != nil {
			return nil, err
		}
		l = tr.ls.join(l, el)
	}
	return tr.wrap(s, l), nil
}
