package script

import (
	"fmt"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// region is what the rewriter knows of one region of the script: a
// branch, loop, function with an early return, operand of and/or,
// conditional expression or comprehension. Its end relabels, with what
// its control depended on, everything the region could have changed on a
// path not taken: the first vars values passed to its end (variables it
// assigns), then containers (the receivers of its mutations; deep ones
// are relabelled with everything they hold).
type region struct {
	pos   syntax.Position
	kind  string
	nvars int
	deep  []bool // per receiver
	// unknown: the region may change containers no name reaches (a call
	// of a function not known at rewrite time, a mutation through an
	// expression); its label then becomes the floor.
	unknown bool
	// raises are the loops and functions whose remaining body this
	// region's label reaches, through a break, continue or return in it.
	raises []int32
}

func (r *region) where() string {
	return fmt.Sprintf("%s at %s", r.kind, r.pos)
}

// enter pushes region id with control label l.
func (tr *tracker) enter(id int32, l *label) {
	tr.push(id, l)
}

// join joins l into region id's frame, pushing it on first use (a loop's
// condition, a comprehension's clauses).
func (tr *tracker) joinRegion(id int32, l *label) {
	if n := len(tr.frames); n > 0 && tr.frames[n-1].region == id {
		tr.raiseFrame(n-1, l)
		return
	}
	tr.push(id, l)
}

// leave pops region id (the top frame) and applies its end to vals:
// the first nvars are returned relabelled, the rest relabelled in place.
func (tr *tracker) leave(id int32, vals starlark.Tuple) (starlark.Tuple, error) {
	n := len(tr.frames)
	if n == 0 || tr.frames[n-1].region != id {
		return nil, fmt.Errorf("internal: region %d ends out of order", id)
	}
	l := tr.frames[n-1].own
	tr.frames = tr.frames[:n-1]
	return tr.settle(id, l, vals)
}

// settle relabels what region id could have changed with l.
func (tr *tracker) settle(id int32, l *label, vals starlark.Tuple) (starlark.Tuple, error) {
	r := &tr.regions[id]
	if l == nil {
		return vals[:min(r.nvars, len(vals))], nil
	}
	for _, target := range r.raises {
		if i := tr.find(target); i >= 0 {
			tr.raiseFrame(i, l)
		}
	}
	if r.unknown {
		tr.raiseFloor(l, r.where())
	}
	out := make(starlark.Tuple, 0, r.nvars)
	for i, v := range vals {
		if i < r.nvars {
			out = append(out, tr.wrap(v, l))
			continue
		}
		if j := i - r.nvars; j < len(r.deep) && r.deep[j] {
			if err := tr.raiseDeep(v, l); err != nil {
				return nil, err
			}
		} else {
			tr.wrap(v, l)
		}
	}
	return out, nil
}

// raiseDeep relabels container v and every container it holds.
func (tr *tracker) raiseDeep(v starlark.Value, l *label) error {
	clear(tr.memo)
	return tr.raiseAll(v, l, 0)
}

func (tr *tracker) raiseAll(v starlark.Value, l *label, depth int) error {
	if t, ok := v.(*tainted); ok {
		v = t.v
	}
	id := identity(v)
	if id == 0 || depth > maxRaiseDepth {
		return nil
	}
	if _, ok := tr.memo[id]; ok {
		return nil
	}
	if err := tr.step(); err != nil {
		return err
	}
	tr.memo[id] = seen
	if isContainer(v) {
		tr.raise(v, l)
	}
	each := func(e starlark.Value) error { return tr.raiseAll(e, l, depth+1) }
	switch x := v.(type) {
	case *starlark.List:
		for i := range x.Len() {
			if err := each(x.Index(i)); err != nil {
				return err
			}
		}
	case starlark.Tuple:
		for _, e := range x {
			if err := each(e); err != nil {
				return err
			}
		}
	case *starlark.Dict:
		for _, kv := range x.Items() {
			if err := each(kv[1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxRaiseDepth stops raiseAll: deeper containers than any value can be
// given to a built-in or a tool are left as they are, and reported when
// one is.
const maxRaiseDepth = 1 << 16

// escape pops the frames above loop or function id into it: a break,
// continue or return leaves them, and what they depended on now decides
// the rest of id's body.
func (tr *tracker) escape(id int32) error {
	i := tr.find(id)
	if i < 0 {
		return fmt.Errorf("internal: escape to region %d not entered", id)
	}
	var l *label
	for _, f := range tr.frames[i+1:] {
		l = tr.ls.join(l, f.own)
	}
	tr.frames = tr.frames[:i+1]
	tr.raiseFrame(i, l)
	return nil
}

// labelledIterable iterates over a labelled sequence or mapping, each
// element labelled too. It wraps the sequence's own iterator, so the
// interpreter's rule against changing a sequence while iterating over it
// holds as it does without labels.
type labelledIterable struct {
	it starlark.Iterable
	l  *label
	tr *tracker
}

func (li *labelledIterable) String() string        { return li.it.String() }
func (li *labelledIterable) Type() string          { return li.it.Type() }
func (li *labelledIterable) Freeze()               {}
func (li *labelledIterable) Truth() starlark.Bool  { return true }
func (li *labelledIterable) Hash() (uint32, error) { return 0, errLabelled }
func (li *labelledIterable) Iterate() starlark.Iterator {
	return &labelledIterator{inner: li.it.Iterate(), l: li.l, tr: li.tr}
}

type labelledIterator struct {
	inner starlark.Iterator
	l     *label
	tr    *tracker
}

func (it *labelledIterator) Next(p *starlark.Value) bool {
	if !it.inner.Next(p) {
		return false
	}
	*p = it.tr.wrap(*p, it.l)
	return true
}

func (it *labelledIterator) Done() { it.inner.Done() }

// iterable is x to iterate over with each element labelled, and the
// label of how many elements there are.
func (tr *tracker) iterable(x starlark.Value) (starlark.Value, *label, error) {
	v, l, err := tr.top(x)
	if err != nil {
		return nil, nil, err
	}
	it, ok := v.(starlark.Iterable)
	if !ok {
		return nil, nil, fmt.Errorf("%s value is not iterable", v.Type())
	}
	if l == nil {
		return v, nil, nil
	}
	return &labelledIterable{it: it, l: l, tr: tr}, l, nil
}
