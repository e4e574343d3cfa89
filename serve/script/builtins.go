package script

import (
	"fmt"

	"go.starlark.net/starlark"
)

// universalAware are the universe's built-ins that keep labels: those
// that give back their arguments' elements (list, sorted, zip, ...) keep
// each element's own label rather than flattening them into one, and
// those that call back into the script (sorted, min, max with key=) call
// with labelled values.
func (tr *tracker) universalAware() map[*starlark.Builtin]awareFn {
	u := func(name string) *starlark.Builtin { return starlark.Universe[name].(*starlark.Builtin) }
	m := map[*starlark.Builtin]awareFn{}
	for _, name := range []string{"len", "list", "tuple", "reversed"} {
		b := u(name)
		m[b] = func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			return tr.shallow(th, b, args, kwargs)
		}
	}
	m[u("enumerate")] = func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return tr.shallow(th, u("enumerate"), args, kwargs)
	}
	m[u("zip")] = func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return tr.shallow(th, u("zip"), args, kwargs)
	}
	m[u("dict")] = tr.dictBuiltin
	m[u("getattr")] = tr.getattrBuiltin
	m[u("sorted")] = tr.sortedBuiltin
	m[u("min")] = func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return tr.extremum(th, u("min"), args, kwargs)
	}
	m[u("max")] = func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return tr.extremum(th, u("max"), args, kwargs)
	}
	return m
}

// shallow calls a built-in that holds its arguments' elements without
// reading them: each argument goes without its own label (joined into
// the result's), its elements as they are.
func (tr *tracker) shallow(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := noUnbound(args, kwargs); err != nil {
		return nil, err
	}
	var l *label
	top := make(starlark.Tuple, len(args))
	for i, a := range args {
		v, al, err := tr.top(a)
		if err != nil {
			return nil, err
		}
		if t, ok := v.(starlark.Tuple); ok && b.Name() != "len" {
			v = t // a tuple's elements keep their labels too
		}
		top[i], l = v, tr.ls.join(l, al)
	}
	_, pkw, l, err := tr.flatArgs(nil, kwargs, l)
	if err != nil {
		return nil, err
	}
	res, err := starlark.Call(th, b, top, pkw)
	if err != nil {
		return nil, err
	}
	return tr.wrap(res, l), nil
}

// dictBuiltin is dict(x?, **kwargs).
func (tr *tracker) dictBuiltin(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) > 1 {
		return nil, fmt.Errorf("dict: got %d arguments, want at most 1", len(args))
	}
	if err := noUnbound(args, kwargs); err != nil {
		return nil, err
	}
	d := starlark.NewDict(len(kwargs))
	l, err := tr.update(d, args, kwargs)
	if err != nil {
		return nil, fmt.Errorf("dict: %s", err)
	}
	return tr.wrap(d, l), nil
}

// getattrBuiltin is getattr(x, name, default?).
func (tr *tracker) getattrBuiltin(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(kwargs) > 0 || len(args) < 2 || len(args) > 3 {
		return tr.callPlain(th, starlark.Universe["getattr"], nil, args, kwargs)
	}
	x, xl, err := tr.top(args[0])
	if err != nil {
		return nil, err
	}
	n, nl, err := tr.flat(args[1])
	if err != nil {
		return nil, err
	}
	name, ok := n.(starlark.String)
	if !ok {
		return nil, fmt.Errorf("getattr: for parameter name: got %s, want string", n.Type())
	}
	l := tr.ls.join(xl, nl)
	v, err := getAttr(x, string(name))
	if err != nil {
		if len(args) == 3 {
			return tr.wrap(args[2], l), nil
		}
		return nil, err
	}
	return tr.wrap(v, l), nil
}

// keyed is the elements of iterable, each labelled, and the plain keys
// they are ordered by (the elements, or key's results), with what the
// order depends on: every key.
func (tr *tracker) keyed(th *starlark.Thread, iterable, key starlark.Value) (elems, keys []starlark.Value, l *label, err error) {
	it, il, err := tr.iterable(iterable)
	if err != nil {
		return nil, nil, nil, err
	}
	iter := it.(starlark.Iterable).Iterate()
	defer iter.Done()
	var e starlark.Value
	for iter.Next(&e) {
		elems = append(elems, e)
	}
	l = il
	if key != nil && key != starlark.None {
		// How often the key function runs depends on il: its changes
		// must be known, or il becomes the floor.
		tr.enter(0, il)
		defer func() { tr.frames = tr.frames[:len(tr.frames)-1] }()
		if tr.mayChange(key) {
			tr.raiseFloor(il, "a key function that changes containers, at "+callerPos(th))
		}
	}
	keys = make([]starlark.Value, len(elems))
	for i, e := range elems {
		k := e
		if key != nil && key != starlark.None {
			if k, err = tr.call(th, key, starlark.Tuple{e}, nil); err != nil {
				return nil, nil, nil, err
			}
		}
		pk, kl, err := tr.flat(k)
		if err != nil {
			return nil, nil, nil, err
		}
		keys[i], l = pk, tr.ls.join(l, kl)
	}
	return elems, keys, l, nil
}

// mayChange reports whether calling f may change containers its caller
// can see.
func (tr *tracker) mayChange(f starlark.Value) bool {
	fv, _, _ := tr.top(f)
	switch fn := fv.(type) {
	case *starlark.Function:
		impure, known := tr.impure[fn.Position()]
		return impure || !known
	case *starlark.Builtin:
		return fn.Receiver() != nil && isContainer(fn.Receiver())
	}
	return true
}

// indexKey is a built-in key function over indexes: element i sorts as
// keys[i], so the interpreter's own sort and comparisons decide.
func indexKey(keys []starlark.Value) *starlark.Builtin {
	return starlark.NewBuiltin("key", func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		i, _ := starlark.AsInt32(args[0])
		return keys[i], nil
	})
}

func indexes(n int) *starlark.List {
	idx := make([]starlark.Value, n)
	for i := range idx {
		idx[i] = starlark.MakeInt(i)
	}
	return starlark.NewList(idx)
}

// sortedBuiltin is sorted(iterable, key=None, reverse=False).
func (tr *tracker) sortedBuiltin(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var iterable, key, reverse starlark.Value = nil, starlark.None, starlark.False
	if err := starlark.UnpackArgs("sorted", args, kwargs, "iterable", &iterable, "key?", &key, "reverse?", &reverse); err != nil {
		return nil, err
	}
	rev, rl, err := tr.flat(reverse)
	if err != nil {
		return nil, err
	}
	elems, keys, l, err := tr.keyed(th, iterable, key)
	if err != nil {
		return nil, fmt.Errorf("sorted: %s", err)
	}
	order, err := starlark.Call(th, starlark.Universe["sorted"], starlark.Tuple{indexes(len(elems))}, []starlark.Tuple{
		{starlark.String("key"), indexKey(keys)}, {starlark.String("reverse"), rev}})
	if err != nil {
		return nil, err
	}
	ol := order.(*starlark.List)
	out := make([]starlark.Value, ol.Len())
	for i := range out {
		j, _ := starlark.AsInt32(ol.Index(i))
		out[i] = elems[j]
	}
	return tr.wrap(starlark.NewList(out), tr.ls.join(l, rl)), nil
}

// extremum is min or max: the element chosen depends on every key.
func (tr *tracker) extremum(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("%s requires at least one positional argument", b.Name())
	}
	var key starlark.Value = starlark.None
	if err := starlark.UnpackArgs(b.Name(), nil, kwargs, "key?", &key); err != nil {
		return nil, err
	}
	var iterable starlark.Value = args
	if len(args) == 1 {
		iterable = args[0]
	}
	elems, keys, l, err := tr.keyed(th, iterable, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", b.Name(), err)
	}
	i, err := starlark.Call(th, b, starlark.Tuple{indexes(len(elems))}, []starlark.Tuple{{starlark.String("key"), indexKey(keys)}})
	if err != nil {
		return nil, err
	}
	j, _ := starlark.AsInt32(i)
	return tr.wrap(elems[j], l), nil
}
