package script

import (
	"context"

	"go.starlark.net/resolve"
	"go.starlark.net/syntax"

	"github.com/capkit/capkit/fault"
)

// The static half of the monitor. A region's end must relabel what the
// region could have changed on a path the run did not take: the
// variables it assigns (syntax says which) and the containers it
// mutates. A mutation's receiver is named when it is a variable, or an
// element of one (groups[k].append(x): everything in groups is
// relabelled); a call of a top-level function is known by its summary
// (the globals and parameters it mutates). Anything else (a function
// held in a variable, a mutation through a call's result) is unknown,
// and a region with an unknown change makes its label the floor.

// mutators are the methods that change their receiver.
var mutators = map[string]bool{
	"append": true, "clear": true, "extend": true, "insert": true, "pop": true, "remove": true,
	"popitem": true, "setdefault": true, "update": true, "add": true, "discard": true,
}

// elementOf are the methods that give an element of their receiver (or
// a list of them).
var elementOf = map[string]bool{
	"get": true, "setdefault": true, "pop": true, "popitem": true, "values": true, "items": true,
}

// freshCalls are the universal functions whose result is a new container.
var freshCalls = map[string]bool{
	"list": true, "dict": true, "set": true, "sorted": true, "reversed": true, "enumerate": true, "zip": true, "tuple": true,
}

// freshMethods are the methods whose result is a new container.
var freshMethods = map[string]bool{
	"split": true, "rsplit": true, "splitlines": true, "keys": true, "values": true, "items": true,
	"partition": true, "rpartition": true, "elems": true, "codepoints": true,
}

func bindingOf(id *syntax.Ident) *resolve.Binding {
	b, _ := id.Binding.(*resolve.Binding)
	return b
}

// recvRef is a container a region may mutate, by the variable holding it
// (deep: or something inside it).
type recvRef struct {
	id   *syntax.Ident
	deep bool
}

// effects are the mutations found in a piece of syntax.
type effects struct {
	recv    []recvRef
	unknown bool
	// inner are the comprehension variables bound inside the piece: a
	// receiver held in one cannot be named at the piece's end.
	inner map[*resolve.Binding]bool
}

// nameable reports whether a region's end can name the variable: one of
// its own function or a global (an enclosing function's cannot be
// initialized where it is read, nor a predeclared name relabelled).
func nameable(b *resolve.Binding) bool {
	return b != nil && (b.Scope == resolve.Local || b.Scope == resolve.Cell || b.Scope == resolve.Global)
}

func (ef *effects) add(id *syntax.Ident, deep bool) {
	b := bindingOf(id)
	if !nameable(b) || ef.inner[b] {
		ef.unknown = true
		return
	}
	for i, r := range ef.recv {
		if bindingOf(r.id) == b {
			ef.recv[i].deep = r.deep || deep
			return
		}
	}
	ef.recv = append(ef.recv, recvRef{id: id, deep: deep})
}

// summary is what a call of a top-level function may change.
type summary struct {
	globals []recvRef    // global variables' containers
	params  map[int]bool // parameters' containers, by index (true: deep)
	unknown bool
}

// analyzer finds effects, knowing the summaries of top-level functions.
// Regions nest, and each analyzes what it holds, so its work is counted:
// past budget steps, or once ctx ends, err is set and it stops.
type analyzer struct {
	sums map[*resolve.Binding]*summary
	defs map[*resolve.Binding]*syntax.DefStmt

	ctx    context.Context
	work   int
	budget int
	err    error
}

// tick counts one step of analysis; false once the analysis must stop.
func (a *analyzer) tick() bool {
	if a.err != nil {
		return false
	}
	a.work++
	switch {
	case a.work > a.budget:
		a.err = fault.New(fault.Limit, "script: following provenance through this script takes more than %d analysis steps (regions nested deeply around a large body, or long chains of functions): split the script", a.budget)
	case a.work%1024 == 0 && a.ctx.Err() != nil:
		a.err = fault.New(fault.Unavailable, "script: canceled while its provenance was analyzed")
	}
	return a.err == nil
}

// root is the variable an expression reaches a container through: x in
// x, x[i], x.f, x.get(k), x.values(); direct when it is x itself.
func root(e syntax.Expr) (id *syntax.Ident, direct bool) {
	switch x := e.(type) {
	case *syntax.Ident:
		return x, true
	case *syntax.ParenExpr:
		return root(x.X)
	case *syntax.IndexExpr:
		id, _ := root(x.X)
		return id, false
	case *syntax.SliceExpr:
		id, _ := root(x.X)
		return id, false
	case *syntax.DotExpr:
		id, _ := root(x.X)
		return id, false
	case *syntax.CallExpr:
		if d, ok := x.Fn.(*syntax.DotExpr); ok && elementOf[d.Name.Name] {
			id, _ := root(d.X)
			return id, false
		}
	}
	return nil, false
}

func (a *analyzer) stmts(ss []syntax.Stmt, ef *effects) {
	for _, s := range ss {
		a.stmt(s, ef)
	}
}

func (a *analyzer) stmt(s syntax.Stmt, ef *effects) {
	if !a.tick() {
		ef.unknown = true
		return
	}
	switch s := s.(type) {
	case *syntax.ExprStmt:
		a.expr(s.X, ef)
	case *syntax.AssignStmt:
		a.target(s.LHS, ef, s.Op != syntax.EQ)
		a.expr(s.RHS, ef)
	case *syntax.IfStmt:
		a.expr(s.Cond, ef)
		a.stmts(s.True, ef)
		a.stmts(s.False, ef)
	case *syntax.ForStmt:
		a.target(s.Vars, ef, false)
		a.expr(s.X, ef)
		a.stmts(s.Body, ef)
	case *syntax.WhileStmt:
		a.expr(s.Cond, ef)
		a.stmts(s.Body, ef)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			a.expr(s.Result, ef)
		}
	case *syntax.DefStmt:
		for _, p := range s.Params {
			if b, ok := p.(*syntax.BinaryExpr); ok {
				a.expr(b.Y, ef)
			}
		}
	}
}

// target notes the containers an assignment's target changes: x[i] = v
// changes x, x += v changes the list x.
func (a *analyzer) target(e syntax.Expr, ef *effects, augmented bool) {
	switch x := e.(type) {
	case *syntax.Ident:
		if augmented {
			ef.add(x, false)
		}
	case *syntax.ParenExpr:
		a.target(x.X, ef, augmented)
	case *syntax.TupleExpr:
		for _, t := range x.List {
			a.target(t, ef, augmented)
		}
	case *syntax.ListExpr:
		for _, t := range x.List {
			a.target(t, ef, augmented)
		}
	case *syntax.IndexExpr:
		a.mutates(x.X, ef)
		a.expr(x.X, ef)
		a.expr(x.Y, ef)
	case *syntax.DotExpr:
		a.mutates(x.X, ef)
		a.expr(x.X, ef)
	default:
		ef.unknown = true
	}
}

// mutates notes that the container e evaluates to changes.
func (a *analyzer) mutates(e syntax.Expr, ef *effects) {
	id, direct := root(e)
	if id == nil {
		ef.unknown = true
		return
	}
	ef.add(id, !direct)
}

func (a *analyzer) exprs(es []syntax.Expr, ef *effects) {
	for _, e := range es {
		a.expr(e, ef)
	}
}

func (a *analyzer) expr(e syntax.Expr, ef *effects) {
	if !a.tick() {
		ef.unknown = true
		return
	}
	switch x := e.(type) {
	case nil, *syntax.Ident, *syntax.Literal:
	case *syntax.ParenExpr:
		a.expr(x.X, ef)
	case *syntax.ListExpr:
		a.exprs(x.List, ef)
	case *syntax.TupleExpr:
		a.exprs(x.List, ef)
	case *syntax.DictExpr:
		for _, de := range x.List {
			de := de.(*syntax.DictEntry)
			a.expr(de.Key, ef)
			a.expr(de.Value, ef)
		}
	case *syntax.UnaryExpr:
		a.expr(x.X, ef)
	case *syntax.BinaryExpr:
		a.expr(x.X, ef)
		a.expr(x.Y, ef)
	case *syntax.CondExpr:
		a.expr(x.Cond, ef)
		a.expr(x.True, ef)
		a.expr(x.False, ef)
	case *syntax.IndexExpr:
		a.expr(x.X, ef)
		a.expr(x.Y, ef)
	case *syntax.SliceExpr:
		a.expr(x.X, ef)
		a.expr(x.Lo, ef)
		a.expr(x.Hi, ef)
		a.expr(x.Step, ef)
	case *syntax.DotExpr:
		a.expr(x.X, ef)
	case *syntax.LambdaExpr:
		// Defining runs nothing but the defaults.
		for _, p := range x.Params {
			if b, ok := p.(*syntax.BinaryExpr); ok {
				a.expr(b.Y, ef)
			}
		}
	case *syntax.Comprehension:
		if ef.inner == nil {
			ef.inner = map[*resolve.Binding]bool{}
		}
		for _, c := range x.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				a.expr(c.X, ef)
				bindTargets(c.Vars, ef.inner)
			case *syntax.IfClause:
				a.expr(c.Cond, ef)
			}
		}
		a.expr(x.Body, ef)
	case *syntax.CallExpr:
		a.call(x, ef)
	default:
		ef.unknown = true
	}
}

// bindTargets adds the variables a comprehension's clause binds.
func bindTargets(e syntax.Expr, set map[*resolve.Binding]bool) {
	switch x := e.(type) {
	case *syntax.Ident:
		if b := bindingOf(x); b != nil {
			set[b] = true
		}
	case *syntax.ParenExpr:
		bindTargets(x.X, set)
	case *syntax.TupleExpr:
		for _, t := range x.List {
			bindTargets(t, set)
		}
	case *syntax.ListExpr:
		for _, t := range x.List {
			bindTargets(t, set)
		}
	}
}

// call notes what a call may change.
func (a *analyzer) call(x *syntax.CallExpr, ef *effects) {
	for _, arg := range x.Args {
		switch arg := arg.(type) {
		case *syntax.BinaryExpr:
			if arg.Op == syntax.EQ {
				a.expr(arg.Y, ef)
				continue
			}
		case *syntax.UnaryExpr:
			if arg.Op == syntax.STAR || arg.Op == syntax.STARSTAR {
				a.expr(arg.X, ef)
				continue
			}
		}
		a.expr(arg, ef)
	}
	switch fn := x.Fn.(type) {
	case *syntax.DotExpr:
		a.expr(fn.X, ef)
		if mutators[fn.Name.Name] {
			a.mutates(fn.X, ef)
		}
		return // a built-in method, a module's function or tool.call
	case *syntax.Ident:
		b := bindingOf(fn)
		if b == nil {
			break
		}
		switch b.Scope {
		case resolve.Universal:
			if fn.Name == "sorted" || fn.Name == "min" || fn.Name == "max" {
				a.keyArg(x, ef)
			}
			return
		case resolve.Global:
			if s, ok := a.sums[b]; ok {
				a.apply(s, x, ef)
				return
			}
		}
	}
	ef.unknown = true
}

// keyArg notes what a key function passed to sorted, min or max changes.
func (a *analyzer) keyArg(x *syntax.CallExpr, ef *effects) {
	for _, arg := range x.Args {
		kw, ok := arg.(*syntax.BinaryExpr)
		if !ok || kw.Op != syntax.EQ || kw.X.(*syntax.Ident).Name != "key" {
			continue
		}
		switch k := kw.Y.(type) {
		case *syntax.LambdaExpr:
			var inner effects
			a.expr(k.Body, &inner)
			if inner.unknown || len(inner.recv) > 0 {
				ef.unknown = true
			}
		case *syntax.Ident:
			b := bindingOf(k)
			if b != nil && b.Scope == resolve.Universal {
				continue
			}
			if s, ok := a.sums[b]; !ok || s.unknown || len(s.globals) > 0 || len(s.params) > 0 {
				ef.unknown = true
			}
		default:
			ef.unknown = true
		}
	}
}

// apply adds what a call of a summarized function changes: its globals,
// and the arguments given for the parameters it mutates.
func (a *analyzer) apply(s *summary, x *syntax.CallExpr, ef *effects) {
	if s.unknown {
		ef.unknown = true
		return
	}
	for _, g := range s.globals {
		ef.add(g.id, g.deep)
	}
	if len(s.params) == 0 {
		return
	}
	def := a.defs[bindingOf(x.Fn.(*syntax.Ident))]
	for i, deep := range s.params {
		argExpr := argFor(def, x, i)
		if argExpr == nil {
			ef.unknown = true
			continue
		}
		id, direct := root(argExpr)
		if id == nil {
			ef.unknown = true
			continue
		}
		ef.add(id, deep || !direct)
	}
}

// argFor is the argument a call gives def's parameter i, or nil when the
// call passes it through * or ** (or not at all: a default is fresh per
// definition and may hold a container every call shares).
func argFor(def *syntax.DefStmt, x *syntax.CallExpr, i int) syntax.Expr {
	name := paramName(def.Params[i])
	pos := 0
	for _, arg := range x.Args {
		switch arg := arg.(type) {
		case *syntax.BinaryExpr:
			if arg.Op == syntax.EQ {
				if arg.X.(*syntax.Ident).Name == name {
					return arg.Y
				}
				continue
			}
		case *syntax.UnaryExpr:
			if arg.Op == syntax.STAR || arg.Op == syntax.STARSTAR {
				return nil
			}
		}
		if pos == i {
			return arg
		}
		pos++
	}
	return nil
}

func paramName(p syntax.Expr) string {
	switch p := p.(type) {
	case *syntax.Ident:
		return p.Name
	case *syntax.BinaryExpr:
		return p.X.(*syntax.Ident).Name
	case *syntax.UnaryExpr:
		if id, ok := p.X.(*syntax.Ident); ok {
			return id.Name
		}
	}
	return ""
}

// assignment is one way a piece of syntax binds a variable.
type assignment struct {
	id  *syntax.Ident
	rhs syntax.Expr // for x = rhs; nil otherwise
	of  syntax.Expr // for a loop variable: what is iterated over
	aug bool        // x op= v
}

// assignments lists the variables ss binds, outside nested functions.
func (a *analyzer) assignments(ss []syntax.Stmt) []assignment {
	var out []assignment
	var walk func(ss []syntax.Stmt)
	var targets func(e, rhs, of syntax.Expr, aug bool)
	targets = func(e, rhs, of syntax.Expr, aug bool) {
		switch x := e.(type) {
		case *syntax.Ident:
			out = append(out, assignment{id: x, rhs: rhs, of: of, aug: aug})
		case *syntax.ParenExpr:
			targets(x.X, rhs, of, aug)
		case *syntax.TupleExpr:
			for _, t := range x.List {
				targets(t, nil, of, aug)
			}
		case *syntax.ListExpr:
			for _, t := range x.List {
				targets(t, nil, of, aug)
			}
		}
	}
	walk = func(ss []syntax.Stmt) {
		for _, s := range ss {
			if !a.tick() {
				return
			}
			switch s := s.(type) {
			case *syntax.AssignStmt:
				targets(s.LHS, s.RHS, nil, s.Op != syntax.EQ)
			case *syntax.ForStmt:
				targets(s.Vars, nil, s.X, false)
				walk(s.Body)
			case *syntax.WhileStmt:
				walk(s.Body)
			case *syntax.IfStmt:
				walk(s.True)
				walk(s.False)
			case *syntax.DefStmt:
				out = append(out, assignment{id: s.Name})
			case *syntax.LoadStmt:
				for _, id := range s.To {
					out = append(out, assignment{id: id})
				}
			}
		}
	}
	walk(ss)
	return out
}

// fresh reports whether e always makes a new container.
func fresh(e syntax.Expr) bool {
	switch x := e.(type) {
	case *syntax.ListExpr, *syntax.DictExpr, *syntax.Comprehension:
		return true
	case *syntax.ParenExpr:
		return fresh(x.X)
	case *syntax.CallExpr:
		switch fn := x.Fn.(type) {
		case *syntax.Ident:
			b := bindingOf(fn)
			return b != nil && b.Scope == resolve.Universal && freshCalls[fn.Name]
		case *syntax.DotExpr:
			if freshMethods[fn.Name.Name] {
				return true
			}
			if id, ok := fn.X.(*syntax.Ident); ok && fn.Name.Name == "call" && id.Name == "tool" {
				b := bindingOf(id)
				return b != nil && b.Scope == resolve.Predeclared
			}
		}
	}
	return false
}

// settled turns the receivers of a piece into what its end relabels,
// given the assignments in it: a receiver the piece also assigns is
// named by what it was assigned from (the iterated container's variable
// for a loop variable, the container's for an element of one), and by
// its value at the start (entry) when it is assigned a fresh container.
// It reports false when a receiver cannot be named that way.
func settled(ef *effects, as []assignment) (recv []recvRef, entry []*syntax.Ident, ok bool) {
	assigned := map[*resolve.Binding][]assignment{}
	for _, a := range as {
		if b := bindingOf(a.id); b != nil {
			assigned[b] = append(assigned[b], a)
		}
	}
	ok = !ef.unknown
	add := func(r recvRef) {
		for i, o := range recv {
			if bindingOf(o.id) == bindingOf(r.id) {
				recv[i].deep = o.deep || r.deep
				return
			}
		}
		recv = append(recv, r)
	}
	for _, r := range ef.recv {
		how, isAssigned := assigned[bindingOf(r.id)]
		if !isAssigned {
			add(r)
			continue
		}
		needEntry := false
		for _, a := range how {
			var src syntax.Expr
			switch {
			case a.aug:
				continue // x op= v changes x's list in place, or makes a number
			case a.of != nil:
				src = a.of
			case a.rhs != nil && fresh(a.rhs):
				needEntry = true
				continue
			case a.rhs != nil:
				src = a.rhs
			default:
				ok = false
				continue
			}
			id, direct := root(src)
			if id == nil || !nameable(bindingOf(id)) {
				ok = false
				continue
			}
			if _, alsoAssigned := assigned[bindingOf(id)]; alsoAssigned {
				ok = false
				continue
			}
			// x = y holds y's container; x = y[k] and a loop over y
			// one inside y.
			add(recvRef{id: id, deep: !direct || a.of != nil})
		}
		if needEntry {
			entry = append(entry, r.id)
		}
	}
	return recv, entry, ok
}
