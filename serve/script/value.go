package script

import (
	"errors"
	"unsafe"
	"weak"

	"go.starlark.net/starlark"
)

// tainted is an immutable value (string, number, tuple, function, ...)
// with the label of what it depends on. Lists, dicts and sets are never
// wrapped: a container's label lives in the side table, with the object,
// so that every alias sees it. A tainted never holds another.
//
// Only the label-aware helpers handle a tainted; the rewritten script
// passes it to no built-in. Should one ever reach the interpreter, it
// fails loudly rather than lose its label: Truth panics (the run fails as
// internal), Hash refuses.
type tainted struct {
	v starlark.Value
	l *label
}

var errLabelled = errors.New("internal: a labelled value reached the interpreter")

func (t *tainted) String() string        { return t.v.String() }
func (t *tainted) Type() string          { return t.v.Type() }
func (t *tainted) Freeze()               { t.v.Freeze() }
func (t *tainted) Truth() starlark.Bool  { panic(errLabelled) }
func (t *tainted) Hash() (uint32, error) { return 0, errLabelled }

// unbound is the value a rewritten script gives a variable before its
// first assignment, so that the end of a region can relabel variables
// that one of its branches would have assigned. A helper that is given
// it fails as the interpreter would have at the read.
type unbound struct{}

var unboundValue starlark.Value = unbound{}

func (unbound) String() string        { return "<unbound>" }
func (unbound) Type() string          { return "unbound" }
func (unbound) Freeze()               {}
func (unbound) Truth() starlark.Bool  { panic(errLabelled) }
func (unbound) Hash() (uint32, error) { return 0, errUnbound }

var errUnbound = errors.New("variable referenced before assignment")

// sideTable holds the labels of lists, dicts and sets, keyed by address.
// An entry holds a weak pointer to its object, so the table keeps nothing
// alive, and an entry whose object was collected (another object may now
// have its address) is known to be stale: it labels no new object, and
// setting one's label replaces it. Stale entries are swept when the table
// has doubled since the last sweep, so it holds at most about twice the
// labelled containers alive, at an amortized constant cost per entry.
type sideTable struct {
	m     map[uintptr]sideEntry
	swept int // the entries the last sweep kept
}

type sideEntry struct {
	l *label
	// the object, one of three by its type
	wl weak.Pointer[starlark.List]
	wd weak.Pointer[starlark.Dict]
	ws weak.Pointer[starlark.Set]
}

// sideTableMinSweep is the table size below which stale entries are left.
const sideTableMinSweep = 1024

// holds reports whether e is v's entry, not a collected object's.
func (e *sideEntry) holds(v starlark.Value) bool {
	switch x := v.(type) {
	case *starlark.List:
		return e.wl.Value() == x
	case *starlark.Dict:
		return e.wd.Value() == x
	case *starlark.Set:
		return e.ws.Value() == x
	}
	return false
}

// live reports whether e's object has not been collected.
func (e *sideEntry) live() bool {
	return e.wl.Value() != nil || e.wd.Value() != nil || e.ws.Value() != nil
}

// addrOf is the address of a list, dict or set, or 0 for anything else.
func addrOf(v starlark.Value) uintptr {
	switch x := v.(type) {
	case *starlark.List:
		return uintptr(unsafe.Pointer(x))
	case *starlark.Dict:
		return uintptr(unsafe.Pointer(x))
	case *starlark.Set:
		return uintptr(unsafe.Pointer(x))
	}
	return 0
}

// get is the label of container v.
func (s *sideTable) get(v starlark.Value) *label {
	if len(s.m) == 0 {
		return nil
	}
	e, ok := s.m[addrOf(v)]
	if !ok || !e.holds(v) {
		return nil
	}
	return e.l
}

// set records l as the label of container v, replacing any.
func (s *sideTable) set(v starlark.Value, l *label) {
	if s.m == nil {
		s.m = map[uintptr]sideEntry{}
	}
	addr := addrOf(v)
	if e, ok := s.m[addr]; ok && e.holds(v) {
		e.l = l
		s.m[addr] = e
		return
	}
	e := sideEntry{l: l}
	switch x := v.(type) {
	case *starlark.List:
		e.wl = weak.Make(x)
	case *starlark.Dict:
		e.wd = weak.Make(x)
	case *starlark.Set:
		e.ws = weak.Make(x)
	}
	s.m[addr] = e
	if len(s.m) >= max(sideTableMinSweep, 2*s.swept) {
		s.sweep()
	}
}

// sweep deletes the entries of collected objects.
func (s *sideTable) sweep() {
	for addr, e := range s.m {
		if !e.live() {
			delete(s.m, addr)
		}
	}
	s.swept = len(s.m)
}

// describe names a value's type for messages, looking through a label.
func describe(v starlark.Value) string {
	if t, ok := v.(*tainted); ok {
		return t.v.Type()
	}
	return v.Type()
}
