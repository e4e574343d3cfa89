package script

import (
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// provModule is the prov module: a script may look at a value's label,
// and ask the host to declassify a value, never change a label itself.
// Without labels every value is trusted and declassify gives its value.
func (e *execution) provModule() *starlarkstruct.Module {
	plain := func(name string, fn func(starlark.Value) starlark.Value) *starlark.Builtin {
		return starlark.NewBuiltin("prov."+name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var x starlark.Value
			if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &x); err != nil {
				return nil, err
			}
			return fn(x), nil
		})
	}
	declassify := starlark.NewBuiltin("prov.declassify", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x starlark.Value
		var reason string
		if err := starlark.UnpackArgs(b.Name(), args, kwargs, "value", &x, "reason", &reason); err != nil {
			return nil, err
		}
		return x, nil
	})
	return &starlarkstruct.Module{Name: "prov", Members: starlark.StringDict{
		"enabled": starlark.Bool(e.b.Provenance),
		"label": plain("label", func(starlark.Value) starlark.Value {
			return labelDict(true, nil)
		}),
		"trusted":    plain("trusted", func(starlark.Value) starlark.Value { return starlark.True }),
		"declassify": declassify,
	}}
}

// labelDict is what prov.label answers.
func labelDict(trusted bool, sources []string) *starlark.Dict {
	d := starlark.NewDict(2)
	list := make([]starlark.Value, len(sources))
	for i, s := range sources {
		list[i] = starlark.String(s)
	}
	d.SetKey(starlark.String("trusted"), starlark.Bool(trusted))
	d.SetKey(starlark.String("sources"), starlark.NewList(list))
	return d
}

// provAware are prov's functions with labels. What they answer is as
// labelled as the value they look at: a label describes data, so it
// depends on that data.
func (e *execution) provAware() map[string]awareFn {
	tr := e.tr
	one := func(name string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, *label, error) {
		if len(args) != 1 || len(kwargs) != 0 {
			return nil, nil, fault.New(fault.InvalidInput, "prov.%s: want one value", name)
		}
		l, err := tr.deep(args[0])
		return args[0], l, err
	}
	return map[string]awareFn{
		"label": func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			_, l, err := one("label", args, kwargs)
			if err != nil {
				return nil, err
			}
			return tr.wrap(labelDict(!tr.untrusted(l), tr.names(l)), l), nil
		},
		"trusted": func(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			_, l, err := one("trusted", args, kwargs)
			if err != nil {
				return nil, err
			}
			return tr.wrap(starlark.Bool(!tr.untrusted(l)), l), nil
		},
		"declassify": e.declassify,
	}
}

// declassify is prov.declassify(value, reason): the host's hook decides;
// the reason must be the script's own text, since the hook may show it
// to a person.
func (e *execution) declassify(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	tr := e.tr
	var x, reason starlark.Value
	if err := starlark.UnpackArgs("prov.declassify", args, kwargs, "value", &x, "reason", &reason); err != nil {
		return nil, err
	}
	r, rl, err := tr.flat(reason)
	if err != nil {
		return nil, err
	}
	rs, ok := r.(starlark.String)
	if !ok {
		return nil, fault.New(fault.InvalidInput, "prov.declassify: for parameter reason: got %s, want string", r.Type())
	}
	if tr.untrusted(rl) {
		return nil, &callFailure{tool: "prov.declassify", f: fault.New(fault.Denied, "provenance: prov.declassify at %s: the reason depends on untrusted data (%v); write it in the script", callerPos(th), tr.untrustedNames(rl))}
	}
	plain, l, err := tr.flat(x)
	if err != nil {
		return nil, err
	}
	if l == nil {
		return x, nil
	}
	value, err := toJSON(plain, limits.ScriptMaxCallArgBytes, "prov.declassify value")
	if err != nil {
		return nil, err
	}
	req := &declassifyRequest{Value: value, Sources: l.sources(), Reason: string(rs), At: callerPos(th)}
	if err := e.host.declassify(e.ctx, req); err != nil {
		return nil, &callFailure{tool: "prov.declassify", f: fault.As(err)}
	}
	return plain, nil
}

// toolCallLabelled is tool.call with labels: the host is told what each
// argument and the call itself depend on, and the result depends on its
// source, its arguments and the call's control.
func (e *execution) toolCallLabelled(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	tr := e.tr
	var name, arg, text starlark.Value = nil, starlark.None, starlark.False
	if err := starlark.UnpackArgs("tool.call", args, kwargs, "name", &name, "arg?", &arg, "text?", &text); err != nil {
		return nil, err
	}
	n, nl, err := tr.flat(name)
	if err != nil {
		return nil, err
	}
	ns, ok := n.(starlark.String)
	if !ok {
		return nil, fault.New(fault.InvalidInput, "tool.call: for parameter name: got %s, want string", n.Type())
	}
	t, tl, err := tr.flat(text)
	if err != nil {
		return nil, err
	}
	asText, ok := t.(starlark.Bool)
	if !ok {
		return nil, fault.New(fault.InvalidInput, "tool.call: for parameter text: got %s, want bool", t.Type())
	}
	lb, argl, err := tr.argLabels(arg)
	if err != nil {
		return nil, err
	}
	encoded, err := encodeArg(arg)
	if err != nil {
		return nil, err
	}
	control := tr.ls.join(tr.pc(), nl)
	lb.Control, lb.Under, lb.At = control.sources(), tr.under(), tr.at(th)
	reply, err := e.callHost(&callRequest{Name: string(ns), Args: encoded, Prov: lb})
	if err != nil {
		return nil, err
	}
	tr.sources = append(tr.sources, reply.NewSources...)
	v, err := resultValue(reply.Result, bool(asText))
	if err != nil {
		return nil, err
	}
	l := tr.ls.join(tr.ls.join(control, tl), argl)
	if reply.Source >= 0 {
		l = tr.ls.join(l, tr.ls.of(reply.Source))
	}
	return tr.wrap(v, l), nil
}

// argLabels are the labels of tool.call's argument: a dict's members
// each with its own (and the dict's), anything else as a whole; and the
// join of them all. A dict whose members all have one label is described
// as a whole too, which the host reads the same way (each member has the
// whole's label), without a map per call.
func (tr *tracker) argLabels(arg starlark.Value) (*callLabels, *label, error) {
	v, own, err := tr.top(arg)
	if err != nil {
		return nil, nil, err
	}
	d, ok := v.(*starlark.Dict)
	if !ok {
		l, err := tr.deep(arg)
		return &callLabels{Whole: l.sources()}, l, err
	}
	lb := &callLabels{}
	all, same := own, true
	members, items := tr.members[:0], d.Items()
	for _, kv := range items {
		if _, ok := kv[0].(starlark.String); !ok {
			continue // not a JSON object: encoding refuses it
		}
		l, err := tr.deep(kv[1])
		if err != nil {
			return nil, nil, err
		}
		l = tr.ls.join(l, own)
		same = same && (len(members) == 0 || l == members[0])
		members = append(members, l)
		all = tr.ls.join(all, l)
	}
	tr.members = members[:0]
	if same {
		if len(members) > 0 {
			lb.Whole = members[0].sources()
		} else {
			lb.Whole = own.sources()
		}
		return lb, all, nil
	}
	lb.Args = make(map[string][]int32, len(members))
	i := 0
	for _, kv := range items {
		if k, ok := kv[0].(starlark.String); ok {
			lb.Args[string(k)] = members[i].sources()
			i++
		}
	}
	return lb, all, nil
}

// under says which regions and floor raises the control of a call now
// comes from.
func (tr *tracker) under() []string {
	var out []string
	for _, f := range tr.frames {
		if f.own != nil && tr.untrusted(f.own) && len(out) < limits.ScriptProvenanceExplainItems {
			out = append(out, tr.regions[f.region].where())
		}
	}
	if tr.untrusted(tr.floor) {
		out = append(out, tr.floorAt...)
	}
	return out
}
