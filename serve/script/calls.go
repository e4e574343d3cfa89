package script

import (
	"fmt"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// awareFn is a built-in that handles labels itself.
type awareFn func(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error)

// call is f(*args, **kwargs) in the rewritten script. A script function
// gets its arguments with their labels; a built-in that knows labels
// handles them; any other built-in gets them plain and its result is
// labelled with everything it was given.
func (tr *tracker) call(th *starlark.Thread, f starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	fv, fl, err := tr.top(f)
	if err != nil {
		return nil, err
	}
	switch fn := fv.(type) {
	case *starlark.Function:
		// Which function runs depends on fl: so may every change the one
		// not run would have made.
		tr.raiseFloor(fl, "a call of a function chosen by data at "+callerPos(th))
		res, err := starlark.Call(th, fn, args, kwargs)
		if err != nil {
			return nil, err
		}
		return tr.wrap(res, fl), nil
	case *starlark.Builtin:
		if recv := fn.Receiver(); recv != nil {
			return tr.method(th, recv, fn.Name(), tr.ls.join(fl, tr.labelOf(recv)), args, kwargs)
		}
		if aware, ok := tr.aware[fn]; ok {
			res, err := aware(th, args, kwargs)
			if err != nil {
				return nil, err
			}
			return tr.wrap(res, fl), nil
		}
		return tr.callPlain(th, fn, fl, args, kwargs)
	}
	return tr.callPlain(th, fv, fl, args, kwargs)
}

// callPlain calls a built-in with plain arguments.
func (tr *tracker) callPlain(th *starlark.Thread, fn starlark.Value, l *label, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	pargs, pkw, l, err := tr.flatArgs(args, kwargs, l)
	if err != nil {
		return nil, err
	}
	res, err := starlark.Call(th, fn, pargs, pkw)
	if err != nil {
		return nil, err
	}
	return tr.wrap(res, l), nil
}

// callerPos is the position of the script's innermost frame.
func callerPos(th *starlark.Thread) string {
	if p, ok := callerPosition(th); ok {
		return p.String()
	}
	return "?"
}

func callerPosition(th *starlark.Thread) (syntax.Position, bool) {
	for i := 0; i < th.CallStackDepth(); i++ {
		if p := th.CallFrame(i).Pos; p.IsValid() && p.Filename() != "<builtin>" {
			return p, true
		}
	}
	return syntax.Position{}, false
}

// at is callerPos, each position formatted once per run: every
// labelled tool.call names its own.
func (tr *tracker) at(th *starlark.Thread) string {
	p, ok := callerPosition(th)
	if !ok {
		return "?"
	}
	s, ok := tr.positions[p]
	if !ok {
		s = p.String()
		tr.positions[p] = s
	}
	return s
}

// methodCall is x.name(*args, **kwargs).
func (tr *tracker) methodCall(th *starlark.Thread, x starlark.Value, name string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	xv, xl, err := tr.top(x)
	if err != nil {
		return nil, err
	}
	switch xv.(type) {
	case *starlark.List, *starlark.Dict, *starlark.Set, starlark.String, starlark.Bytes:
		// xl is the receiver's label: a container's is never on a wrapper.
		return tr.method(th, xv, name, xl, args, kwargs)
	}
	m, err := getAttr(xv, name)
	if err != nil {
		return nil, err
	}
	return tr.call(th, tr.wrap(m, xl), args, kwargs)
}

// method is a method of a built-in type called on recv, which is plain;
// rl is what recv and the method value depend on.
func (tr *tracker) method(th *starlark.Thread, recv starlark.Value, name string, rl *label, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	m, err := getAttr(recv, name)
	if err != nil {
		return nil, err
	}
	switch r := recv.(type) {
	case *starlark.List:
		return tr.listMethod(th, r, m, rl, args, kwargs)
	case *starlark.Dict:
		return tr.dictMethod(th, r, m, rl, args, kwargs)
	case *starlark.Set:
		res, err := tr.callPlain(th, m, rl, args, kwargs)
		if err != nil {
			return nil, err
		}
		switch name {
		case "add", "clear", "discard", "pop", "remove", "update":
			_, _, l, _ := tr.flatArgs(args, kwargs, nil)
			tr.mutated(r, l)
		}
		return res, nil
	}
	return tr.callPlain(th, m, rl, args, kwargs)
}

func noUnbound(args starlark.Tuple, kwargs []starlark.Tuple) error {
	for _, a := range args {
		if _, ok := a.(unbound); ok {
			return errUnbound
		}
	}
	for _, kv := range kwargs {
		if _, ok := kv[1].(unbound); ok {
			return errUnbound
		}
	}
	return nil
}

// listMethod runs a list method: values stored keep their labels; the
// list's label grows with whatever decided how it changed.
func (tr *tracker) listMethod(th *starlark.Thread, l *starlark.List, m starlark.Value, rl *label, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := noUnbound(args, kwargs); err != nil {
		return nil, err
	}
	name := m.(*starlark.Builtin).Name()
	switch name {
	case "append", "clear":
		if _, err := starlark.Call(th, m, args, kwargs); err != nil {
			return nil, err
		}
		tr.mutated(l, nil)
		return starlark.None, nil
	case "extend":
		if len(args) == 1 {
			v, vl, err := tr.top(args[0])
			if err != nil {
				return nil, err
			}
			if _, err := starlark.Call(th, m, starlark.Tuple{v}, kwargs); err != nil {
				return nil, err
			}
			tr.mutated(l, vl)
			return starlark.None, nil
		}
	case "insert":
		if len(args) == 2 {
			i, il, err := tr.flat(args[0])
			if err != nil {
				return nil, err
			}
			if _, err := starlark.Call(th, m, starlark.Tuple{i, args[1]}, kwargs); err != nil {
				return nil, err
			}
			tr.mutated(l, il)
			return starlark.None, nil
		}
	case "pop":
		pargs, pkw, il, err := tr.flatArgs(args, kwargs, nil)
		if err != nil {
			return nil, err
		}
		res, err := starlark.Call(th, m, pargs, pkw)
		if err != nil {
			return nil, err
		}
		tr.mutated(l, il)
		return tr.wrap(res, tr.ls.join(rl, il)), nil
	case "remove":
		if len(args) == 1 && len(kwargs) == 0 {
			return tr.listRemove(th, l, args[0], rl)
		}
	case "index":
		// The answer depends on every element compared.
		plain, pl, err := tr.flat(l)
		if err != nil {
			return nil, err
		}
		pm, _ := getAttr(plain, "index")
		res, err := tr.callPlain(th, pm, tr.ls.join(rl, pl), args, kwargs)
		return res, err
	}
	return starlark.Call(th, m, args, kwargs) // the interpreter's own refusal
}

// listRemove removes the first element equal to v.
func (tr *tracker) listRemove(th *starlark.Thread, l *starlark.List, v starlark.Value, rl *label) (starlark.Value, error) {
	pv, vl, err := tr.flat(v)
	if err != nil {
		return nil, err
	}
	all, al, err := tr.flat(l)
	if err != nil {
		return nil, err
	}
	plain := all.(*starlark.List)
	for i := range plain.Len() {
		eq, err := starlark.Equal(plain.Index(i), pv)
		if err != nil {
			return nil, err
		}
		if eq {
			pop, _ := getAttr(l, "pop")
			if _, err := starlark.Call(th, pop, starlark.Tuple{starlark.MakeInt(i)}, nil); err != nil {
				return nil, err
			}
			tr.mutated(l, tr.ls.join(al, vl))
			return starlark.None, nil
		}
	}
	return nil, fmt.Errorf("remove: element not found")
}

// dictMethod runs a dict method: keys are held plain (their labels the
// dict's), values as they are.
func (tr *tracker) dictMethod(th *starlark.Thread, d *starlark.Dict, m starlark.Value, rl *label, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := noUnbound(args, kwargs); err != nil {
		return nil, err
	}
	name := m.(*starlark.Builtin).Name()
	switch name {
	case "get", "pop", "setdefault":
		if len(args) >= 1 {
			k, kl, err := tr.flat(args[0])
			if err != nil {
				return nil, err
			}
			res, err := starlark.Call(th, m, append(starlark.Tuple{k}, args[1:]...), kwargs)
			if err != nil {
				return nil, err
			}
			if name != "get" {
				tr.mutated(d, kl)
			}
			return tr.wrap(res, tr.ls.join(rl, kl)), nil
		}
	case "keys", "values", "items":
		res, err := starlark.Call(th, m, args, kwargs)
		if err != nil {
			return nil, err
		}
		return tr.wrap(res, rl), nil
	case "popitem", "clear":
		res, err := starlark.Call(th, m, args, kwargs)
		if err != nil {
			return nil, err
		}
		tr.mutated(d, nil)
		return tr.wrap(res, rl), nil
	case "update":
		if len(args) <= 1 {
			l, err := tr.update(d, args, kwargs)
			if err != nil {
				return nil, err
			}
			tr.mutated(d, l)
			return starlark.None, nil
		}
	}
	return starlark.Call(th, m, args, kwargs)
}

// update is d.update(args..., **kwargs) with labels: it returns what the
// keys added depend on.
func (tr *tracker) update(d *starlark.Dict, args starlark.Tuple, kwargs []starlark.Tuple) (*label, error) {
	var l *label
	if len(args) == 1 {
		v, vl, err := tr.top(args[0])
		if err != nil {
			return nil, err
		}
		l = vl
		if src, ok := v.(*starlark.Dict); ok {
			for _, kv := range src.Items() {
				if err := d.SetKey(kv[0], kv[1]); err != nil {
					return nil, err
				}
			}
		} else {
			it, ok := v.(starlark.Iterable)
			if !ok {
				return nil, fmt.Errorf("update: got %s, want iterable", v.Type())
			}
			iter := it.Iterate()
			defer iter.Done()
			var e starlark.Value
			for i := 0; iter.Next(&e); i++ {
				pair, err := tr.unpack(tr.wrap(e, vl), 2)
				if err != nil {
					return nil, fmt.Errorf("dictionary update sequence element #%d: %s", i, err)
				}
				k, kl, err := tr.flat(pair[0])
				if err != nil {
					return nil, err
				}
				if err := d.SetKey(k, pair[1]); err != nil {
					return nil, err
				}
				l = tr.ls.join(l, kl)
			}
		}
	}
	for _, kv := range kwargs {
		if err := d.SetKey(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	return l, nil
}
