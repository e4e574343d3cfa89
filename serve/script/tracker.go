package script

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// tracker is the interpreter side of provenance for one run: the labels
// of values, the control labels of the regions being executed, and the
// floor (what every later effect depends on). It is used only by the
// goroutine running the script.
type tracker struct {
	ls      *labels
	side    sideTable
	sources []sourceInfo // by source id, as the host described them

	frames []frame
	floor  *label
	// floorAt says where the floor was raised, for denials.
	floorAt []string

	regions []region // by id, from the rewriter
	// aware are the built-ins that handle labels themselves.
	aware map[*starlark.Builtin]awareFn
	// impure names the functions (by the position of their def or
	// lambda) whose calls may change containers the caller can see.
	impure map[syntax.Position]bool

	// memo serves flat and deep: containers seen in one traversal.
	memo map[uintptr]starlark.Value
	// positions are the script positions formatted (at).
	positions map[syntax.Position]string
	// members is argLabels' scratch: the labels of a dict's members.
	members []*label

	// ctx ends the traversals of values (a region's end may relabel a
	// whole structure at every step of a loop); visits counts them.
	ctx    context.Context
	visits int
}

// step counts one value a traversal visits, and fails once the run's
// context has ended: the interpreter checks it only between its steps.
func (tr *tracker) step() error {
	tr.visits++
	if tr.visits%1024 == 0 && tr.ctx != nil && tr.ctx.Err() != nil {
		return errStopped
	}
	return nil
}

var errStopped = errors.New("script: stopped while labels were followed through a value")

// sourceInfo is what the host says of a source: its name in messages
// and whether its data is trusted.
type sourceInfo struct {
	Name    string `json:"name"`
	Trusted bool   `json:"trusted"`
}

// frame is one region being executed: a branch, a loop, a function with
// an early return, an operand of and/or.
type frame struct {
	region int32
	own    *label // what the region's control depends on
	pc     *label // own joined with every frame below
}

func newTracker(regions []region, impure map[syntax.Position]bool) *tracker {
	return &tracker{ls: newLabels(), regions: regions, impure: impure, memo: map[uintptr]starlark.Value{}, positions: map[syntax.Position]string{}}
}

// pc is the label every effect made now depends on through control.
func (tr *tracker) pc() *label {
	if n := len(tr.frames); n > 0 {
		return tr.ls.join(tr.floor, tr.frames[n-1].pc)
	}
	return tr.floor
}

func (tr *tracker) push(region int32, own *label) {
	below := (*label)(nil)
	if n := len(tr.frames); n > 0 {
		below = tr.frames[n-1].pc
	}
	tr.frames = append(tr.frames, frame{region: region, own: own, pc: tr.ls.join(below, own)})
}

// find is the index of the innermost frame of region, or -1.
func (tr *tracker) find(region int32) int {
	for i := len(tr.frames) - 1; i >= 0; i-- {
		if tr.frames[i].region == region {
			return i
		}
	}
	return -1
}

// raiseFrame joins l into frame i's own label and the control of every
// frame above it.
func (tr *tracker) raiseFrame(i int, l *label) {
	if l == nil {
		return
	}
	tr.frames[i].own = tr.ls.join(tr.frames[i].own, l)
	for ; i < len(tr.frames); i++ {
		below := (*label)(nil)
		if i > 0 {
			below = tr.frames[i-1].pc
		}
		tr.frames[i].pc = tr.ls.join(below, tr.frames[i].own)
	}
}

// raiseFloor makes every later effect depend on l; why says where.
func (tr *tracker) raiseFloor(l *label, why string) {
	if l == nil || tr.ls.join(tr.floor, l) == tr.floor {
		return
	}
	tr.floor = tr.ls.join(tr.floor, l)
	if len(tr.floorAt) < limits.ScriptProvenanceExplainItems {
		tr.floorAt = append(tr.floorAt, why)
	}
}

// labelOf is v's own label: a tainted value's, a container's side entry.
func (tr *tracker) labelOf(v starlark.Value) *label {
	switch x := v.(type) {
	case *tainted:
		return x.l
	case *starlark.List, *starlark.Dict, *starlark.Set:
		return tr.side.get(v)
	}
	return nil
}

// raise joins l into container v's side entry.
func (tr *tracker) raise(v starlark.Value, l *label) {
	if l == nil {
		return
	}
	old := tr.side.get(v)
	if j := tr.ls.join(old, l); j != old {
		tr.side.set(v, j)
	}
}

// wrap is v depending on l as well: a container's side entry grows (every
// alias sees it), anything else is wrapped.
func (tr *tracker) wrap(v starlark.Value, l *label) starlark.Value {
	if l == nil {
		return v
	}
	switch x := v.(type) {
	case *tainted:
		j := tr.ls.join(x.l, l)
		if j == x.l {
			return x
		}
		if isContainer(x.v) {
			tr.raise(x.v, l)
			return x
		}
		return &tainted{v: x.v, l: j}
	case *starlark.List, *starlark.Dict, *starlark.Set:
		tr.raise(v, l)
		return v
	case unbound:
		return v
	}
	return &tainted{v: v, l: l}
}

func isContainer(v starlark.Value) bool {
	switch v.(type) {
	case *starlark.List, *starlark.Dict, *starlark.Set:
		return true
	}
	return false
}

// top is v without its own label, and that label. The value inside may
// still hold labelled elements.
func (tr *tracker) top(v starlark.Value) (starlark.Value, *label, error) {
	switch x := v.(type) {
	case *tainted:
		return x.v, x.l, nil
	case *starlark.List, *starlark.Dict, *starlark.Set:
		return v, tr.side.get(v), nil
	case unbound:
		return nil, nil, errUnbound
	}
	return v, nil, nil
}

// deep is the join of every label v holds, its elements' included.
func (tr *tracker) deep(v starlark.Value) (*label, error) {
	switch v.(type) {
	case *tainted, *starlark.List, *starlark.Dict, *starlark.Set, starlark.Tuple, unbound:
	default:
		return nil, nil
	}
	clear(tr.memo)
	_, l, err := tr.scan(v, 0)
	return l, err
}

// flat is v with no label anywhere in it, and the join of every label it
// held. A container holding a labelled value is copied; one that holds
// none is v itself.
func (tr *tracker) flat(v starlark.Value) (starlark.Value, *label, error) {
	switch x := v.(type) {
	case *tainted:
		if !isComposite(x.v) {
			return x.v, x.l, nil
		}
	case *starlark.List, *starlark.Dict, *starlark.Set, starlark.Tuple:
	case unbound:
		return nil, nil, errUnbound
	default:
		return v, nil, nil
	}
	clear(tr.memo)
	dirty, l, err := tr.scan(v, 0)
	if err != nil || !dirty {
		if t, ok := v.(*tainted); ok {
			return t.v, l, err
		}
		return v, l, err
	}
	clear(tr.memo)
	out, err := tr.copyPlain(v, 0)
	return out, l, err
}

func isComposite(v starlark.Value) bool {
	switch v.(type) {
	case *starlark.List, *starlark.Dict, *starlark.Set, starlark.Tuple:
		return true
	}
	return false
}

// identity is a key for a container in one traversal: its address, or a
// tuple's backing array (tuples are values; shared ones share it).
func identity(v starlark.Value) uintptr {
	if t, ok := v.(starlark.Tuple); ok {
		if len(t) == 0 {
			return 0
		}
		return uintptr(unsafe.Pointer(unsafe.SliceData(t)))
	}
	return addrOf(v)
}

var seen = starlark.None // the memo's mark for a container being scanned

// scan reports whether v holds a label (a tainted value, or a container
// with a side entry) and joins every label in it. Each container is
// visited once, so a value that shares or contains itself costs its size.
func (tr *tracker) scan(v starlark.Value, depth int) (dirty bool, l *label, err error) {
	if depth > limits.ScriptLabelMaxDepth {
		return false, nil, fault.New(fault.Limit, "script: a value nested deeper than %d was given to a built-in", limits.ScriptLabelMaxDepth)
	}
	if err := tr.step(); err != nil {
		return false, nil, err
	}
	switch x := v.(type) {
	case *tainted:
		d, inner, err := tr.scan(x.v, depth+1)
		_ = d
		return true, tr.ls.join(x.l, inner), err
	case unbound:
		return false, nil, errUnbound
	case *starlark.List, *starlark.Dict, *starlark.Set, starlark.Tuple:
	default:
		return false, nil, nil
	}
	id := identity(v)
	if id != 0 {
		if _, ok := tr.memo[id]; ok {
			return false, nil, nil
		}
		tr.memo[id] = seen
	}
	if own := tr.labelOf(v); own != nil {
		dirty, l = true, own
	}
	each := func(e starlark.Value) error {
		d, el, err := tr.scan(e, depth+1)
		dirty = dirty || d
		l = tr.ls.join(l, el)
		return err
	}
	switch x := v.(type) {
	case *starlark.List:
		for i := range x.Len() {
			if err := each(x.Index(i)); err != nil {
				return dirty, l, err
			}
		}
	case starlark.Tuple:
		for _, e := range x {
			if err := each(e); err != nil {
				return dirty, l, err
			}
		}
	case *starlark.Dict:
		for _, kv := range x.Items() {
			if err := each(kv[1]); err != nil {
				return dirty, l, err
			}
		}
	}
	return dirty, l, nil
}

// copyPlain copies v without labels, sharing and cycles kept.
func (tr *tracker) copyPlain(v starlark.Value, depth int) (starlark.Value, error) {
	if depth > limits.ScriptLabelMaxDepth {
		return nil, fault.New(fault.Limit, "script: a value nested deeper than %d was given to a built-in", limits.ScriptLabelMaxDepth)
	}
	if err := tr.step(); err != nil {
		return nil, err
	}
	if t, ok := v.(*tainted); ok {
		v = t.v
	}
	id := identity(v)
	if done, ok := tr.memo[id]; ok && id != 0 {
		return done, nil
	}
	switch x := v.(type) {
	case *starlark.List:
		out := starlark.NewList(make([]starlark.Value, 0, x.Len()))
		tr.memo[id] = out
		for i := range x.Len() {
			e, err := tr.copyPlain(x.Index(i), depth+1)
			if err != nil {
				return nil, err
			}
			out.Append(e)
		}
		return out, nil
	case starlark.Tuple:
		out := make(starlark.Tuple, len(x))
		for i, e := range x {
			c, err := tr.copyPlain(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		if id != 0 {
			tr.memo[id] = out
		}
		return out, nil
	case *starlark.Dict:
		out := starlark.NewDict(x.Len())
		tr.memo[id] = out
		for _, kv := range x.Items() {
			e, err := tr.copyPlain(kv[1], depth+1)
			if err != nil {
				return nil, err
			}
			if err := out.SetKey(kv[0], e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *starlark.Set:
		return x, nil // elements of sets are never labelled
	}
	return v, nil
}

// flatArgs flattens a call's arguments, joining their labels into l.
func (tr *tracker) flatArgs(args starlark.Tuple, kwargs []starlark.Tuple, l *label) (starlark.Tuple, []starlark.Tuple, *label, error) {
	var outArgs starlark.Tuple
	for i, a := range args {
		p, al, err := tr.flat(a)
		if err != nil {
			return nil, nil, nil, err
		}
		if p != a && outArgs == nil {
			outArgs = append(make(starlark.Tuple, 0, len(args)), args[:i]...)
		}
		if outArgs != nil {
			outArgs = append(outArgs, p)
		}
		l = tr.ls.join(l, al)
	}
	if outArgs == nil {
		outArgs = args
	}
	var outKw []starlark.Tuple
	for i, kv := range kwargs {
		p, al, err := tr.flat(kv[1])
		if err != nil {
			return nil, nil, nil, err
		}
		if p != kv[1] && outKw == nil {
			outKw = append(make([]starlark.Tuple, 0, len(kwargs)), kwargs[:i]...)
		}
		if outKw != nil {
			outKw = append(outKw, starlark.Tuple{kv[0], p})
		}
		l = tr.ls.join(l, al)
	}
	if outKw == nil {
		outKw = kwargs
	}
	return outArgs, outKw, l, nil
}

// untrusted reports whether l holds a source the host does not trust.
func (tr *tracker) untrusted(l *label) bool {
	for _, s := range l.sources() {
		if int(s) >= len(tr.sources) || !tr.sources[s].Trusted {
			return true
		}
	}
	return false
}

// names are the names of l's sources.
func (tr *tracker) names(l *label) []string {
	var out []string
	for _, s := range l.sources() {
		out = append(out, tr.sourceName(s))
	}
	return out
}

// untrustedNames are the names of l's untrusted sources.
func (tr *tracker) untrustedNames(l *label) []string {
	var out []string
	for _, s := range l.sources() {
		if int(s) >= len(tr.sources) || !tr.sources[s].Trusted {
			out = append(out, tr.sourceName(s))
		}
	}
	return out
}

func (tr *tracker) sourceName(s int32) string {
	if int(s) < len(tr.sources) {
		return tr.sources[s].Name
	}
	return fmt.Sprintf("source %d", s)
}
