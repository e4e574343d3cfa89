package script

import (
	"context"
	"fmt"
	"strconv"

	"go.starlark.net/resolve"
	"go.starlark.net/syntax"
)

// The helpers the rewritten script calls. Their names cannot be lexed,
// so a script can neither name nor shadow them.
const (
	hBin, hUn, hNot                 = "$bin", "$un", "$not"
	hIdx, hSlc, hDot                = "$idx", "$slc", "$dot"
	hSetIdx, hSetDot, hAug          = "$setidx", "$setdot", "$aug"
	hUnp, hDict                     = "$unp", "$dict"
	hCall, hCallV, hMeth            = "$call", "$callv", "$meth"
	hIf, hFor, hWhile, hEnd         = "$if", "$for", "$while", "$end"
	hEsc, hFn, hRet                 = "$esc", "$fn", "$ret"
	hCondQ, hCondX, hLogQ           = "$cq", "$cx", "$lq"
	hLogX, hCompI, hCompF           = "$lx", "$ci", "$cf"
	hCompL, hCompD, hCompS          = "$ce", "$cd", "$cs"
	hNone, hUnbound, hHelpers       = "$None", "$U", "$helpers"
	callbackRegion            int32 = 0 // the frame of a built-in's callback
)

// rewriter turns a resolved file into one whose every operation goes
// through a label-aware helper, recording the regions it makes.
type rewriter struct {
	an      *analyzer
	regions []region
	impure  map[syntax.Position]bool
	temps   int
	module  *scope
	fn      *scope
	// plain are the variables that hold no label wherever the statements
	// being rewritten read them (plainLoopVar).
	plain map[*resolve.Binding]bool
}

// scope is the function (or the file) being rewritten.
type scope struct {
	// assigned are the variables its statements bind, parameters
	// included: those a region's end may read before their assignment
	// are given the unbound value first.
	assigned map[*resolve.Binding]bool
	// binds counts the statements binding each variable.
	binds   map[*resolve.Binding]int
	params  map[*resolve.Binding]bool
	inits   []*syntax.Ident
	initSet map[*resolve.Binding]bool

	fid    int32 // the function's region when it returns early, or -1
	recv   []recvRef
	open   []int32 // the statement regions open, innermost last
	loops  []loop
	lambda bool
}

type loop struct {
	id    int32
	depth int // len(open) once the loop's region is open
}

// rewrite rewrites f, which resolve.File has resolved.
// The analysis it makes is bounded by budget steps and observes ctx.
func rewrite(ctx context.Context, f *syntax.File, budget int) (*syntax.File, []region, map[syntax.Position]bool, error) {
	rw := &rewriter{regions: []region{{kind: "a built-in's callback"}}, impure: map[syntax.Position]bool{}, plain: map[*resolve.Binding]bool{}}
	rw.an = summarize(ctx, f, budget)
	if rw.an.err != nil {
		return nil, nil, nil, rw.an.err
	}
	rw.module = rw.newScope(f.Stmts, nil)
	rw.fn = rw.module
	body, err := rw.stmts(f.Stmts)
	if err != nil {
		return nil, nil, nil, err
	}
	if rw.an.err != nil {
		return nil, nil, nil, rw.an.err
	}
	var pos syntax.Position
	if len(f.Stmts) > 0 {
		pos = syntax.Start(f.Stmts[0])
	}
	out := &syntax.File{Path: f.Path, Stmts: append(rw.inits(rw.module, pos), body...), Options: f.Options}
	return out, rw.regions, rw.impure, nil
}

func (rw *rewriter) newScope(body []syntax.Stmt, params []syntax.Expr) *scope {
	s := &scope{assigned: map[*resolve.Binding]bool{}, binds: map[*resolve.Binding]int{}, params: map[*resolve.Binding]bool{}, initSet: map[*resolve.Binding]bool{}, fid: -1}
	for _, a := range rw.an.assignments(body) {
		if b := bindingOf(a.id); b != nil {
			s.assigned[b] = true
			s.binds[b]++
		}
	}
	for _, p := range params {
		if id := paramIdent(p); id != nil {
			if b := bindingOf(id); b != nil {
				s.params[b] = true
				s.assigned[b] = true
			}
		}
	}
	return s
}

func paramIdent(p syntax.Expr) *syntax.Ident {
	switch p := p.(type) {
	case *syntax.Ident:
		return p
	case *syntax.BinaryExpr:
		return p.X.(*syntax.Ident)
	case *syntax.UnaryExpr:
		id, _ := p.X.(*syntax.Ident)
		return id
	}
	return nil
}

// summarize computes the summaries of the file's top-level functions
// (those bound once, by their def), to a fixed point: one may call
// another. A function's summary is made again only when one it calls
// changed, so a chain of n functions costs n summaries, not n².
func summarize(ctx context.Context, f *syntax.File, budget int) *analyzer {
	an := &analyzer{sums: map[*resolve.Binding]*summary{}, defs: map[*resolve.Binding]*syntax.DefStmt{}, ctx: ctx, budget: budget}
	count := map[*resolve.Binding]int{}
	for _, a := range an.assignments(f.Stmts) {
		count[bindingOf(a.id)]++
	}
	var order []*resolve.Binding
	for _, s := range f.Stmts {
		if d, ok := s.(*syntax.DefStmt); ok {
			if b := bindingOf(d.Name); b != nil && count[b] == 1 {
				an.defs[b] = d
				an.sums[b] = &summary{params: map[int]bool{}}
				order = append(order, b)
			}
		}
	}
	callers := map[*resolve.Binding][]*resolve.Binding{}
	for _, b := range order {
		for _, callee := range an.callees(an.defs[b]) {
			callers[callee] = append(callers[callee], b)
		}
	}
	queued := map[*resolve.Binding]bool{}
	for _, b := range order {
		queued[b] = true
	}
	for len(order) > 0 && an.err == nil {
		b := order[0]
		order = order[1:]
		queued[b] = false
		s := an.summaryOf(an.defs[b])
		if s.equal(an.sums[b]) {
			continue
		}
		an.sums[b] = s
		for _, c := range callers[b] {
			if !queued[c] {
				queued[c] = true
				order = append(order, c)
			}
		}
	}
	return an
}

// callees are the summarized functions d's body names in a call.
func (a *analyzer) callees(d *syntax.DefStmt) []*resolve.Binding {
	var out []*resolve.Binding
	seen := map[*resolve.Binding]bool{}
	syntax.Walk(d, func(n syntax.Node) bool {
		if !a.tick() {
			return false
		}
		if c, ok := n.(*syntax.CallExpr); ok {
			if id, ok := c.Fn.(*syntax.Ident); ok {
				if b := bindingOf(id); b != nil && a.defs[b] != nil && !seen[b] {
					seen[b] = true
					out = append(out, b)
				}
			}
		}
		return true
	})
	return out
}

// summaryOf is what a call of d may change.
func (a *analyzer) summaryOf(d *syntax.DefStmt) *summary {
	var ef effects
	a.stmts(d.Body, &ef)
	recv, _, ok := settled(&ef, a.assignments(d.Body))
	s := &summary{params: map[int]bool{}, unknown: !ok}
	index := map[*resolve.Binding]int{}
	for i, p := range d.Params {
		if id := paramIdent(p); id != nil {
			index[bindingOf(id)] = i
		}
	}
	for _, r := range recv {
		b := bindingOf(r.id)
		if i, isParam := index[b]; isParam {
			if _, star := d.Params[i].(*syntax.UnaryExpr); star {
				s.unknown = true
			}
			s.params[i] = s.params[i] || r.deep
		} else if b.Scope == resolve.Global {
			s.globals = append(s.globals, r)
		} else {
			s.unknown = true
		}
	}
	return s
}

func (s *summary) equal(o *summary) bool {
	if s.unknown != o.unknown || len(s.globals) != len(o.globals) || len(s.params) != len(o.params) {
		return false
	}
	for i, g := range s.globals {
		if bindingOf(g.id) != bindingOf(o.globals[i].id) || g.deep != o.globals[i].deep {
			return false
		}
	}
	for k, v := range s.params {
		if ov, ok := o.params[k]; !ok || ov != v {
			return false
		}
	}
	return true
}

// inits are the statements giving sc's variables the unbound value.
func (rw *rewriter) inits(sc *scope, pos syntax.Position) []syntax.Stmt {
	out := make([]syntax.Stmt, 0, len(sc.inits))
	for _, id := range sc.inits {
		out = append(out, &syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: ident(id.Name, pos), RHS: ident(hUnbound, pos)})
	}
	return out
}

// needInit notes that a region's end reads id's variable.
func (rw *rewriter) needInit(id *syntax.Ident) {
	b := bindingOf(id)
	if b == nil {
		return
	}
	sc := rw.fn
	if b.Scope == resolve.Global {
		sc = rw.module
	}
	if sc.assigned[b] && !sc.params[b] && !sc.initSet[b] {
		sc.initSet[b] = true
		sc.inits = append(sc.inits, id)
	}
}

func (rw *rewriter) newRegion(kind string, pos syntax.Position) int32 {
	rw.regions = append(rw.regions, region{kind: kind, pos: pos})
	return int32(len(rw.regions) - 1)
}

func (rw *rewriter) temp() string {
	rw.temps++
	return "$t" + strconv.Itoa(rw.temps)
}

func ident(name string, pos syntax.Position) *syntax.Ident {
	return &syntax.Ident{NamePos: pos, Name: name}
}

func call(fn string, pos syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	return &syntax.CallExpr{Fn: ident(fn, pos), Lparen: pos, Args: args, Rparen: pos}
}

func intLit(v int, pos syntax.Position) *syntax.Literal {
	return &syntax.Literal{Token: syntax.INT, TokenPos: pos, Raw: strconv.Itoa(v), Value: int64(v)}
}

func strLit(s string, pos syntax.Position) *syntax.Literal {
	return &syntax.Literal{Token: syntax.STRING, TokenPos: pos, Raw: strconv.Quote(s), Value: s}
}

func (rw *rewriter) stmts(ss []syntax.Stmt) ([]syntax.Stmt, error) {
	var out []syntax.Stmt
	for _, s := range ss {
		r, err := rw.stmt(s)
		if err != nil {
			return nil, err
		}
		out = append(out, r...)
	}
	return out, nil
}

func (rw *rewriter) stmt(s syntax.Stmt) ([]syntax.Stmt, error) {
	switch s := s.(type) {
	case *syntax.ExprStmt:
		x, err := rw.expr(s.X)
		return []syntax.Stmt{&syntax.ExprStmt{X: x}}, err
	case *syntax.AssignStmt:
		if s.Op != syntax.EQ {
			return rw.augmented(s)
		}
		v, err := rw.expr(s.RHS)
		if err != nil {
			return nil, err
		}
		return rw.assign(s.LHS, v, s.OpPos)
	case *syntax.IfStmt:
		return rw.ifStmt(s)
	case *syntax.ForStmt:
		return rw.forStmt(s)
	case *syntax.WhileStmt:
		return rw.whileStmt(s)
	case *syntax.BranchStmt:
		return rw.branch(s), nil
	case *syntax.ReturnStmt:
		return rw.returnStmt(s)
	case *syntax.DefStmt:
		return rw.def(s)
	case *syntax.LoadStmt:
		return []syntax.Stmt{s}, nil
	}
	return nil, fmt.Errorf("internal: statement %T", s)
}

// settle fills region id's end from the effects of its body and the
// assignments in it, and returns its end's arguments and the statements
// (snapshots of receivers it reassigns) to run before it.
func (rw *rewriter) settle(id int32, ef *effects, as []assignment, pos syntax.Position) (pre []syntax.Stmt, args []syntax.Expr) {
	recv, entry, ok := settled(ef, as)
	r := &rw.regions[id]
	r.unknown = !ok
	seen := map[*resolve.Binding]bool{}
	args = []syntax.Expr{intLit(int(id), pos)}
	for _, a := range as {
		if b := bindingOf(a.id); b != nil && !seen[b] {
			seen[b] = true
			args = append(args, ident(a.id.Name, pos))
			rw.needInit(a.id)
			r.nvars++
		}
	}
	for _, rc := range recv {
		args = append(args, ident(rc.id.Name, pos))
		r.deep = append(r.deep, rc.deep)
		rw.needInit(rc.id)
	}
	for _, e := range entry {
		t := rw.temp()
		pre = append(pre, &syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: ident(t, pos), RHS: ident(e.Name, pos)})
		rw.needInit(e)
		args = append(args, ident(t, pos))
		r.deep = append(r.deep, true)
	}
	return pre, args
}

// end is the statement ending a region: its variables assigned back.
func (rw *rewriter) end(id int32, args []syntax.Expr, pos syntax.Position) syntax.Stmt {
	c := call(hEnd, pos, args...)
	switch n := rw.regions[id].nvars; n {
	case 0:
		return &syntax.ExprStmt{X: c}
	case 1:
		return &syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: ident(args[1].(*syntax.Ident).Name, pos), RHS: c}
	default:
		lhs := &syntax.TupleExpr{}
		for _, a := range args[1 : 1+n] {
			lhs.List = append(lhs.List, ident(a.(*syntax.Ident).Name, pos))
		}
		return &syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: lhs, RHS: c}
	}
}

// body rewrites the statements of region id, open while they are.
func (rw *rewriter) body(id int32, ss []syntax.Stmt) ([]syntax.Stmt, error) {
	rw.fn.open = append(rw.fn.open, id)
	defer func() { rw.fn.open = rw.fn.open[:len(rw.fn.open)-1] }()
	return rw.stmts(ss)
}

func (rw *rewriter) ifStmt(s *syntax.IfStmt) ([]syntax.Stmt, error) {
	cond, err := rw.expr(s.Cond)
	if err != nil {
		return nil, err
	}
	id := rw.newRegion("if", s.If)
	var ef effects
	rw.an.stmts(s.True, &ef)
	rw.an.stmts(s.False, &ef)
	pre, args := rw.settle(id, &ef, rw.an.assignments(append(append([]syntax.Stmt{}, s.True...), s.False...)), s.If)
	t, err := rw.body(id, s.True)
	if err != nil {
		return nil, err
	}
	f, err := rw.body(id, s.False)
	if err != nil {
		return nil, err
	}
	stmt := &syntax.IfStmt{If: s.If, Cond: call(hIf, s.If, intLit(int(id), s.If), cond), True: t, ElsePos: s.ElsePos, False: f}
	return append(pre, stmt, rw.end(id, args, s.If)), nil
}

func (rw *rewriter) forStmt(s *syntax.ForStmt) ([]syntax.Stmt, error) {
	x, err := rw.expr(s.X)
	if err != nil {
		return nil, err
	}
	id := rw.newRegion("for", s.For)
	var ef effects
	rw.an.target(s.Vars, &ef, false)
	rw.an.stmts(s.Body, &ef)
	pre, args := rw.settle(id, &ef, rw.an.assignments([]syntax.Stmt{s}), s.For)
	var vars syntax.Expr
	var prologue []syntax.Stmt
	if v, ok := s.Vars.(*syntax.Ident); ok {
		vars = ident(v.Name, v.NamePos)
	} else {
		t := rw.temp()
		vars = ident(t, s.For)
		if prologue, err = rw.assign(s.Vars, ident(t, s.For), s.For); err != nil {
			return nil, err
		}
	}
	rw.fn.loops = append(rw.fn.loops, loop{id: id, depth: len(rw.fn.open) + 1})
	pv := rw.plainLoopVar(s)
	if pv != nil {
		rw.plain[pv] = true
	}
	body, err := rw.body(id, s.Body)
	delete(rw.plain, pv)
	rw.fn.loops = rw.fn.loops[:len(rw.fn.loops)-1]
	if err != nil {
		return nil, err
	}
	stmt := &syntax.ForStmt{For: s.For, Vars: vars, X: call(hFor, s.For, intLit(int(id), s.For), x), Body: append(prologue, body...)}
	return append(pre, stmt, rw.end(id, args, s.For)), nil
}

func (rw *rewriter) whileStmt(s *syntax.WhileStmt) ([]syntax.Stmt, error) {
	id := rw.newRegion("while", s.While)
	var ef effects
	rw.an.expr(s.Cond, &ef)
	rw.an.stmts(s.Body, &ef)
	pre, args := rw.settle(id, &ef, rw.an.assignments(s.Body), s.While)
	cond, err := rw.expr(s.Cond)
	if err != nil {
		return nil, err
	}
	rw.fn.loops = append(rw.fn.loops, loop{id: id, depth: len(rw.fn.open) + 1})
	body, err := rw.body(id, s.Body)
	rw.fn.loops = rw.fn.loops[:len(rw.fn.loops)-1]
	if err != nil {
		return nil, err
	}
	stmt := &syntax.WhileStmt{While: s.While, Cond: call(hWhile, s.While, intLit(int(id), s.While), cond), Body: body}
	return append(pre, stmt, rw.end(id, args, s.While)), nil
}

// plainLoopVar is the variable of a loop over range(...) of plain
// operands that nothing else binds in its scope and no function captures,
// or nil. Read in the loop's own body (not in a function or comprehension
// there, which may run later), it holds no label: each iteration binds it
// to an element of an unlabelled range, and only the loop's end, after
// the body, relabels it.
func (rw *rewriter) plainLoopVar(s *syntax.ForStmt) *resolve.Binding {
	v, ok := s.Vars.(*syntax.Ident)
	if !ok {
		return nil
	}
	b := bindingOf(v)
	if b == nil || (b.Scope != resolve.Local && b.Scope != resolve.Global) {
		return nil
	}
	sc := rw.fn
	if b.Scope == resolve.Global {
		sc = rw.module
	}
	if sc.binds[b] != 1 || sc.params[b] {
		return nil
	}
	c, ok := s.X.(*syntax.CallExpr)
	if !ok {
		return nil
	}
	fn, ok := c.Fn.(*syntax.Ident)
	if !ok || fn.Name != "range" {
		return nil
	}
	if fb := bindingOf(fn); fb == nil || fb.Scope != resolve.Universal {
		return nil
	}
	for _, a := range c.Args {
		if !rw.isPlain(a) {
			return nil
		}
	}
	return b
}

// isPlain reports whether e, an operation of literals and plain
// variables, gives a value with no label: such an operation needs no
// helper.
func (rw *rewriter) isPlain(e syntax.Expr) bool {
	switch x := e.(type) {
	case *syntax.Literal:
		return true
	case *syntax.Ident:
		b := bindingOf(x)
		return b != nil && rw.plain[b]
	case *syntax.ParenExpr:
		return rw.isPlain(x.X)
	case *syntax.UnaryExpr:
		return x.Op != syntax.STAR && x.Op != syntax.STARSTAR && rw.isPlain(x.X)
	case *syntax.BinaryExpr:
		return x.Op != syntax.AND && x.Op != syntax.OR && x.Op != syntax.EQ && rw.isPlain(x.X) && rw.isPlain(x.Y)
	}
	return false
}

// native is plain e as the interpreter evaluates it, in new nodes.
func native(e syntax.Expr) syntax.Expr {
	switch x := e.(type) {
	case *syntax.Literal:
		c := *x
		return &c
	case *syntax.Ident:
		return ident(x.Name, x.NamePos)
	case *syntax.ParenExpr:
		return native(x.X)
	case *syntax.UnaryExpr:
		return &syntax.UnaryExpr{OpPos: x.OpPos, Op: x.Op, X: native(x.X)}
	case *syntax.BinaryExpr:
		return &syntax.BinaryExpr{OpPos: x.OpPos, Op: x.Op, X: native(x.X), Y: native(x.Y)}
	}
	panic(fmt.Sprintf("internal: native %T", e))
}

// unplain hides the plain variables while a function or comprehension
// body is rewritten (it may run after they are relabelled); the function
// it returns shows them again.
func (rw *rewriter) unplain() func() {
	saved := rw.plain
	rw.plain = map[*resolve.Binding]bool{}
	return func() { rw.plain = saved }
}

// branch is break, continue or pass. A break or continue inside a region
// of its loop leaves that region: the region's control then decides the
// rest of the loop.
func (rw *rewriter) branch(s *syntax.BranchStmt) []syntax.Stmt {
	if s.Token == syntax.PASS || len(rw.fn.loops) == 0 {
		return []syntax.Stmt{s}
	}
	l := rw.fn.loops[len(rw.fn.loops)-1]
	between := rw.fn.open[l.depth:]
	if len(between) == 0 {
		return []syntax.Stmt{s}
	}
	for _, r := range between {
		rw.regions[r].raises = appendOnce(rw.regions[r].raises, l.id)
	}
	return []syntax.Stmt{&syntax.ExprStmt{X: call(hEsc, s.TokenPos, intLit(int(l.id), s.TokenPos))}, s}
}

func appendOnce(s []int32, v int32) []int32 {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func (rw *rewriter) returnStmt(s *syntax.ReturnStmt) ([]syntax.Stmt, error) {
	var v syntax.Expr = ident(hNone, s.Return)
	if s.Result != nil {
		var err error
		if v, err = rw.expr(s.Result); err != nil {
			return nil, err
		}
	}
	if rw.fn.fid < 0 {
		return []syntax.Stmt{&syntax.ReturnStmt{Return: s.Return, Result: v}}, nil
	}
	for _, r := range rw.fn.open {
		rw.regions[r].raises = appendOnce(rw.regions[r].raises, rw.fn.fid)
	}
	return []syntax.Stmt{&syntax.ReturnStmt{Return: s.Return, Result: rw.ret(v, s.Return)}}, nil
}

// ret is the framed function's $ret(fid, v, receivers...).
func (rw *rewriter) ret(v syntax.Expr, pos syntax.Position) syntax.Expr {
	args := []syntax.Expr{intLit(int(rw.fn.fid), pos), v}
	for _, r := range rw.fn.recv {
		args = append(args, ident(r.id.Name, pos))
	}
	return call(hRet, pos, args...)
}

// returnsEarly reports whether a return lies inside a branch or loop of
// ss (outside nested functions).
func returnsEarly(ss []syntax.Stmt, nested bool) bool {
	for _, s := range ss {
		switch s := s.(type) {
		case *syntax.ReturnStmt:
			if nested {
				return true
			}
		case *syntax.IfStmt:
			if returnsEarly(s.True, true) || returnsEarly(s.False, true) {
				return true
			}
		case *syntax.ForStmt:
			if returnsEarly(s.Body, true) {
				return true
			}
		case *syntax.WhileStmt:
			if returnsEarly(s.Body, true) {
				return true
			}
		}
	}
	return false
}

func (rw *rewriter) params(ps []syntax.Expr) ([]syntax.Expr, error) {
	out := make([]syntax.Expr, len(ps))
	for i, p := range ps {
		switch p := p.(type) {
		case *syntax.BinaryExpr: // name=default, evaluated where the function is defined
			d, err := rw.expr(p.Y)
			if err != nil {
				return nil, err
			}
			x := p.X.(*syntax.Ident)
			out[i] = &syntax.BinaryExpr{OpPos: p.OpPos, Op: p.Op, X: ident(x.Name, x.NamePos), Y: d}
		case *syntax.Ident:
			out[i] = ident(p.Name, p.NamePos)
		case *syntax.UnaryExpr:
			u := &syntax.UnaryExpr{OpPos: p.OpPos, Op: p.Op}
			if id, ok := p.X.(*syntax.Ident); ok {
				u.X = ident(id.Name, id.NamePos)
			}
			out[i] = u
		default:
			out[i] = p
		}
	}
	return out, nil
}

// impureBody reports whether running body (params as given) may change
// containers its caller can see.
func (rw *rewriter) impureBody(body []syntax.Stmt, expr syntax.Expr) bool {
	var ef effects
	if expr != nil {
		rw.an.expr(expr, &ef)
	}
	rw.an.stmts(body, &ef)
	recv, _, ok := settled(&ef, rw.an.assignments(body))
	return !ok || len(recv) > 0
}

func (rw *rewriter) def(s *syntax.DefStmt) ([]syntax.Stmt, error) {
	params, err := rw.params(s.Params)
	if err != nil {
		return nil, err
	}
	rw.impure[s.Def] = rw.impureBody(s.Body, nil)
	defer rw.unplain()()
	outer := rw.fn
	sc := rw.newScope(s.Body, s.Params)
	rw.fn = sc
	defer func() { rw.fn = outer }()
	if returnsEarly(s.Body, false) {
		sc.fid = rw.newRegion("function "+s.Name.Name, s.Def)
		var ef effects
		rw.an.stmts(s.Body, &ef)
		recv, _, ok := settled(&ef, rw.an.assignments(s.Body))
		rw.regions[sc.fid].unknown = !ok
		for _, r := range recv {
			rw.regions[sc.fid].deep = append(rw.regions[sc.fid].deep, r.deep)
			rw.needInit(r.id)
		}
		sc.recv = recv
	}
	body, err := rw.stmts(s.Body)
	if err != nil {
		return nil, err
	}
	pre := rw.inits(sc, s.Def)
	if sc.fid >= 0 {
		pre = append(pre, &syntax.ExprStmt{X: call(hFn, s.Def, intLit(int(sc.fid), s.Def))})
		if _, last := s.Body[len(s.Body)-1].(*syntax.ReturnStmt); !last {
			body = append(body, &syntax.ReturnStmt{Return: s.Def, Result: rw.ret(ident(hNone, s.Def), s.Def)})
		}
	}
	def := &syntax.DefStmt{Def: s.Def, Name: ident(s.Name.Name, s.Name.NamePos), Lparen: s.Lparen, Params: params, Rparen: s.Rparen, Body: append(pre, body...)}
	return []syntax.Stmt{def}, nil
}

// assign is target = v, v rewritten already.
func (rw *rewriter) assign(target, v syntax.Expr, pos syntax.Position) ([]syntax.Stmt, error) {
	switch t := target.(type) {
	case *syntax.Ident:
		return []syntax.Stmt{&syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: ident(t.Name, t.NamePos), RHS: v}}, nil
	case *syntax.ParenExpr:
		return rw.assign(t.X, v, pos)
	case *syntax.TupleExpr:
		return rw.assignAll(t.List, v, pos)
	case *syntax.ListExpr:
		return rw.assignAll(t.List, v, pos)
	case *syntax.IndexExpr:
		pre, v := rw.first(v, pos)
		x, err := rw.expr(t.X)
		if err != nil {
			return nil, err
		}
		y, err := rw.expr(t.Y)
		if err != nil {
			return nil, err
		}
		return append(pre, &syntax.ExprStmt{X: call(hSetIdx, t.Lbrack, x, y, v)}), nil
	case *syntax.DotExpr:
		pre, v := rw.first(v, pos)
		x, err := rw.expr(t.X)
		if err != nil {
			return nil, err
		}
		return append(pre, &syntax.ExprStmt{X: call(hSetDot, t.Dot, x, strLit(t.Name.Name, t.Dot), v)}), nil
	}
	return nil, fmt.Errorf("internal: assignment to %T", target)
}

// first evaluates v into a temporary unless it is a name or a literal,
// so that it is evaluated before the target's parts, as the interpreter
// does.
func (rw *rewriter) first(v syntax.Expr, pos syntax.Position) ([]syntax.Stmt, syntax.Expr) {
	switch v.(type) {
	case *syntax.Ident, *syntax.Literal:
		return nil, v
	}
	t := rw.temp()
	return []syntax.Stmt{&syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: ident(t, pos), RHS: v}}, ident(t, pos)
}

// assignAll is a, b, ... = v: v's elements, each labelled with v.
func (rw *rewriter) assignAll(targets []syntax.Expr, v syntax.Expr, pos syntax.Position) ([]syntax.Stmt, error) {
	unpacked := call(hUnp, pos, v, intLit(len(targets), pos))
	simple := true
	for _, t := range targets {
		if _, ok := t.(*syntax.Ident); !ok {
			simple = false
		}
	}
	if simple {
		lhs := &syntax.TupleExpr{}
		for _, t := range targets {
			id := t.(*syntax.Ident)
			lhs.List = append(lhs.List, ident(id.Name, id.NamePos))
		}
		return []syntax.Stmt{&syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: lhs, RHS: unpacked}}, nil
	}
	tmp := rw.temp()
	out := []syntax.Stmt{&syntax.AssignStmt{OpPos: pos, Op: syntax.EQ, LHS: ident(tmp, pos), RHS: unpacked}}
	for i, t := range targets {
		elem := &syntax.IndexExpr{X: ident(tmp, pos), Lbrack: pos, Y: intLit(i, pos), Rbrack: pos}
		s, err := rw.assign(t, elem, pos)
		if err != nil {
			return nil, err
		}
		out = append(out, s...)
	}
	return out, nil
}

// augmented is target op= v.
func (rw *rewriter) augmented(s *syntax.AssignStmt) ([]syntax.Stmt, error) {
	v, err := rw.expr(s.RHS)
	if err != nil {
		return nil, err
	}
	op := intLit(int(s.Op), s.OpPos)
	lhs := s.LHS
	for {
		p, ok := lhs.(*syntax.ParenExpr)
		if !ok {
			break
		}
		lhs = p.X
	}
	switch t := lhs.(type) {
	case *syntax.Ident:
		aug := call(hAug, s.OpPos, op, ident(t.Name, t.NamePos), v)
		return []syntax.Stmt{&syntax.AssignStmt{OpPos: s.OpPos, Op: syntax.EQ, LHS: ident(t.Name, t.NamePos), RHS: aug}}, nil
	case *syntax.IndexExpr:
		x, err := rw.expr(t.X)
		if err != nil {
			return nil, err
		}
		y, err := rw.expr(t.Y)
		if err != nil {
			return nil, err
		}
		tx, ty := rw.temp(), rw.temp()
		p := s.OpPos
		return []syntax.Stmt{
			&syntax.AssignStmt{OpPos: p, Op: syntax.EQ, LHS: ident(tx, p), RHS: x},
			&syntax.AssignStmt{OpPos: p, Op: syntax.EQ, LHS: ident(ty, p), RHS: y},
			&syntax.ExprStmt{X: call(hSetIdx, t.Lbrack, ident(tx, p), ident(ty, p),
				call(hAug, p, op, call(hIdx, t.Lbrack, ident(tx, p), ident(ty, p)), v))},
		}, nil
	case *syntax.DotExpr:
		x, err := rw.expr(t.X)
		if err != nil {
			return nil, err
		}
		tx := rw.temp()
		p := s.OpPos
		name := strLit(t.Name.Name, t.Dot)
		return []syntax.Stmt{
			&syntax.AssignStmt{OpPos: p, Op: syntax.EQ, LHS: ident(tx, p), RHS: x},
			&syntax.ExprStmt{X: call(hSetDot, t.Dot, ident(tx, p), name, call(hAug, p, op, call(hDot, t.Dot, ident(tx, p), name), v))},
		}, nil
	}
	return nil, fmt.Errorf("internal: augmented assignment to %T", s.LHS)
}

func (rw *rewriter) exprs(es []syntax.Expr) ([]syntax.Expr, error) {
	out := make([]syntax.Expr, len(es))
	for i, e := range es {
		var err error
		if out[i], err = rw.expr(e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// orNone is e rewritten, or $None for an absent e.
func (rw *rewriter) orNone(e syntax.Expr, pos syntax.Position) (syntax.Expr, error) {
	if e == nil {
		return ident(hNone, pos), nil
	}
	return rw.expr(e)
}

func (rw *rewriter) expr(e syntax.Expr) (syntax.Expr, error) {
	switch x := e.(type) {
	case *syntax.Ident:
		return ident(x.Name, x.NamePos), nil
	case *syntax.Literal:
		c := *x
		return &c, nil
	case *syntax.ParenExpr:
		return rw.expr(x.X)
	case *syntax.ListExpr:
		l, err := rw.exprs(x.List)
		return &syntax.ListExpr{Lbrack: x.Lbrack, List: l, Rbrack: x.Rbrack}, err
	case *syntax.TupleExpr:
		l, err := rw.exprs(x.List)
		return &syntax.TupleExpr{Lparen: x.Lparen, List: l, Rparen: x.Rparen}, err
	case *syntax.DictExpr:
		return rw.dict(x)
	case *syntax.UnaryExpr:
		if rw.isPlain(x) {
			return native(x), nil
		}
		v, err := rw.expr(x.X)
		if err != nil {
			return nil, err
		}
		if x.Op == syntax.NOT {
			return call(hNot, x.OpPos, v), nil
		}
		return call(hUn, x.OpPos, intLit(int(x.Op), x.OpPos), v), nil
	case *syntax.BinaryExpr:
		if x.Op == syntax.AND || x.Op == syntax.OR {
			return rw.logical(x)
		}
		if rw.isPlain(x) {
			return native(x), nil
		}
		l, err := rw.expr(x.X)
		if err != nil {
			return nil, err
		}
		r, err := rw.expr(x.Y)
		if err != nil {
			return nil, err
		}
		return call(hBin, x.OpPos, intLit(int(x.Op), x.OpPos), l, r), nil
	case *syntax.CondExpr:
		return rw.conditional(x)
	case *syntax.IndexExpr:
		l, err := rw.expr(x.X)
		if err != nil {
			return nil, err
		}
		i, err := rw.expr(x.Y)
		return call(hIdx, x.Lbrack, l, i), err
	case *syntax.SliceExpr:
		args := []syntax.Expr{}
		for _, p := range []syntax.Expr{x.X, x.Lo, x.Hi, x.Step} {
			a, err := rw.orNone(p, x.Lbrack)
			if err != nil {
				return nil, err
			}
			args = append(args, a)
		}
		return call(hSlc, x.Lbrack, args...), nil
	case *syntax.DotExpr:
		l, err := rw.expr(x.X)
		return call(hDot, x.Dot, l, strLit(x.Name.Name, x.Dot)), err
	case *syntax.CallExpr:
		return rw.callExpr(x)
	case *syntax.LambdaExpr:
		return rw.lambda(x)
	case *syntax.Comprehension:
		return rw.comprehension(x)
	}
	return nil, fmt.Errorf("internal: expression %T", e)
}

// dict is a dict literal: native when its keys are literals (no label to
// keep), else built by $dict, which holds keys plain.
func (rw *rewriter) dict(x *syntax.DictExpr) (syntax.Expr, error) {
	literal := true
	for _, e := range x.List {
		if _, ok := e.(*syntax.DictEntry).Key.(*syntax.Literal); !ok {
			literal = false
		}
	}
	if literal {
		out := &syntax.DictExpr{Lbrace: x.Lbrace, Rbrace: x.Rbrace}
		for _, e := range x.List {
			de := e.(*syntax.DictEntry)
			k, _ := rw.expr(de.Key)
			v, err := rw.expr(de.Value)
			if err != nil {
				return nil, err
			}
			out.List = append(out.List, &syntax.DictEntry{Key: k, Colon: de.Colon, Value: v})
		}
		return out, nil
	}
	var args []syntax.Expr
	for _, e := range x.List {
		de := e.(*syntax.DictEntry)
		k, err := rw.expr(de.Key)
		if err != nil {
			return nil, err
		}
		v, err := rw.expr(de.Value)
		if err != nil {
			return nil, err
		}
		args = append(args, k, v)
	}
	return call(hDict, x.Lbrace, args...), nil
}

// callExpr is f(args): $meth for a method, $call otherwise, $callv when
// the call spreads *args or **kwargs.
func (rw *rewriter) callExpr(x *syntax.CallExpr) (syntax.Expr, error) {
	var pos, named []syntax.Expr
	var star, starstar syntax.Expr
	for _, a := range x.Args {
		switch a := a.(type) {
		case *syntax.BinaryExpr:
			if a.Op == syntax.EQ {
				v, err := rw.expr(a.Y)
				if err != nil {
					return nil, err
				}
				k := a.X.(*syntax.Ident)
				named = append(named, &syntax.BinaryExpr{OpPos: a.OpPos, Op: syntax.EQ, X: ident(k.Name, k.NamePos), Y: v})
				continue
			}
		case *syntax.UnaryExpr:
			if a.Op == syntax.STAR || a.Op == syntax.STARSTAR {
				v, err := rw.expr(a.X)
				if err != nil {
					return nil, err
				}
				if a.Op == syntax.STAR {
					star = v
				} else {
					starstar = v
				}
				continue
			}
		}
		v, err := rw.expr(a)
		if err != nil {
			return nil, err
		}
		pos = append(pos, v)
	}
	if star == nil && starstar == nil {
		if d, ok := x.Fn.(*syntax.DotExpr); ok {
			recv, err := rw.expr(d.X)
			if err != nil {
				return nil, err
			}
			return call(hMeth, x.Lparen, append(append([]syntax.Expr{recv, strLit(d.Name.Name, d.Dot)}, pos...), named...)...), nil
		}
		fn, err := rw.expr(x.Fn)
		if err != nil {
			return nil, err
		}
		return call(hCall, x.Lparen, append(append([]syntax.Expr{fn}, pos...), named...)...), nil
	}
	fn, err := rw.expr(x.Fn)
	if err != nil {
		return nil, err
	}
	kw := &syntax.DictExpr{Lbrace: x.Lparen, Rbrace: x.Lparen}
	for _, n := range named {
		b := n.(*syntax.BinaryExpr)
		kw.List = append(kw.List, &syntax.DictEntry{Key: strLit(b.X.(*syntax.Ident).Name, b.OpPos), Colon: b.OpPos, Value: b.Y})
	}
	if star == nil {
		star = ident(hNone, x.Lparen)
	}
	if starstar == nil {
		starstar = ident(hNone, x.Lparen)
	}
	return call(hCallV, x.Lparen, fn, &syntax.TupleExpr{Lparen: x.Lparen, List: pos, Rparen: x.Lparen}, star, kw, starstar), nil
}

func (rw *rewriter) lambda(x *syntax.LambdaExpr) (syntax.Expr, error) {
	params, err := rw.params(x.Params)
	if err != nil {
		return nil, err
	}
	rw.impure[x.Lambda] = rw.impureBody(nil, x.Body)
	defer rw.unplain()()
	outer := rw.fn
	rw.fn = rw.newScope(nil, x.Params)
	rw.fn.lambda = true
	defer func() { rw.fn = outer }()
	body, err := rw.expr(x.Body)
	if err != nil {
		return nil, err
	}
	return &syntax.LambdaExpr{Lambda: x.Lambda, Params: params, Body: body}, nil
}

// regionEnd is a region's end as an expression: $Xx(id, v, receivers...)
// relabels v with what the region's control depended on.
func (rw *rewriter) regionEnd(helper string, id int32, v syntax.Expr, ef *effects, pos syntax.Position) syntax.Expr {
	recv, _, ok := settled(ef, nil)
	r := &rw.regions[id]
	r.unknown = !ok
	args := []syntax.Expr{intLit(int(id), pos), v}
	for _, rc := range recv {
		args = append(args, ident(rc.id.Name, pos))
		r.deep = append(r.deep, rc.deep)
		rw.needInit(rc.id)
	}
	return call(helper, pos, args...)
}

func (rw *rewriter) logical(x *syntax.BinaryExpr) (syntax.Expr, error) {
	l, err := rw.expr(x.X)
	if err != nil {
		return nil, err
	}
	id := rw.newRegion(x.Op.String(), x.OpPos)
	var ef effects
	rw.an.expr(x.Y, &ef)
	r, err := rw.expr(x.Y)
	if err != nil {
		return nil, err
	}
	inner := &syntax.BinaryExpr{OpPos: x.OpPos, Op: x.Op, X: call(hLogQ, x.OpPos, intLit(int(id), x.OpPos), l), Y: r}
	return rw.regionEnd(hLogX, id, inner, &ef, x.OpPos), nil
}

func (rw *rewriter) conditional(x *syntax.CondExpr) (syntax.Expr, error) {
	c, err := rw.expr(x.Cond)
	if err != nil {
		return nil, err
	}
	id := rw.newRegion("conditional", x.If)
	var ef effects
	rw.an.expr(x.True, &ef)
	rw.an.expr(x.False, &ef)
	t, err := rw.expr(x.True)
	if err != nil {
		return nil, err
	}
	f, err := rw.expr(x.False)
	if err != nil {
		return nil, err
	}
	inner := &syntax.CondExpr{If: x.If, Cond: call(hCondQ, x.If, intLit(int(id), x.If), c), True: t, ElsePos: x.ElsePos, False: f}
	return rw.regionEnd(hCondX, id, inner, &ef, x.If), nil
}

// comprehension: its clauses join into one region, whose label the
// result takes; keys of a dict or set comprehension are held plain.
func (rw *rewriter) comprehension(x *syntax.Comprehension) (syntax.Expr, error) {
	defer rw.unplain()()
	id := rw.newRegion("comprehension", x.Lbrack)
	ef := effects{inner: map[*resolve.Binding]bool{}}
	var clauses []syntax.Node
	for i, c := range x.Clauses {
		switch c := c.(type) {
		case *syntax.ForClause:
			if i > 0 {
				rw.an.expr(c.X, &ef)
			}
			bindTargets(c.Vars, ef.inner)
			it, err := rw.expr(c.X)
			if err != nil {
				return nil, err
			}
			vars, extra, err := rw.compTargets(c.Vars, c.For)
			if err != nil {
				return nil, err
			}
			clauses = append(clauses, &syntax.ForClause{For: c.For, Vars: vars, In: c.In, X: call(hCompI, c.For, intLit(int(id), c.For), it)})
			clauses = append(clauses, extra...)
		case *syntax.IfClause:
			rw.an.expr(c.Cond, &ef)
			cond, err := rw.expr(c.Cond)
			if err != nil {
				return nil, err
			}
			clauses = append(clauses, &syntax.IfClause{If: c.If, Cond: call(hCompF, c.If, intLit(int(id), c.If), cond)})
		}
	}
	helper := hCompL
	var body syntax.Expr
	var err error
	if de, ok := x.Body.(*syntax.DictEntry); ok {
		helper = hCompD
		rw.an.expr(de.Key, &ef)
		rw.an.expr(de.Value, &ef)
		k, err := rw.expr(de.Key)
		if err != nil {
			return nil, err
		}
		v, err := rw.expr(de.Value)
		if err != nil {
			return nil, err
		}
		body = &syntax.TupleExpr{Lparen: de.Colon, List: []syntax.Expr{k, v}, Rparen: de.Colon}
	} else {
		if x.Curly {
			helper = hCompS
		}
		rw.an.expr(x.Body, &ef)
		if body, err = rw.expr(x.Body); err != nil {
			return nil, err
		}
	}
	inner := &syntax.Comprehension{Lbrack: x.Lbrack, Body: body, Clauses: clauses, Rbrack: x.Rbrack}
	return rw.regionEnd(helper, id, inner, &ef, x.Lbrack), nil
}

// compTargets is a comprehension's loop variables: a name as it is, a
// tuple through a temporary unpacked (each element labelled) by further
// clauses iterating over one-element lists.
func (rw *rewriter) compTargets(vars syntax.Expr, pos syntax.Position) (syntax.Expr, []syntax.Node, error) {
	switch v := vars.(type) {
	case *syntax.Ident:
		return ident(v.Name, v.NamePos), nil, nil
	case *syntax.ParenExpr:
		return rw.compTargets(v.X, pos)
	case *syntax.TupleExpr, *syntax.ListExpr:
		var elems []syntax.Expr
		if t, ok := v.(*syntax.TupleExpr); ok {
			elems = t.List
		} else {
			elems = v.(*syntax.ListExpr).List
		}
		t := rw.temp()
		lhs := &syntax.TupleExpr{}
		var nested []syntax.Node
		for _, e := range elems {
			target, more, err := rw.compTargets(e, pos)
			if err != nil {
				return nil, nil, err
			}
			lhs.List = append(lhs.List, target)
			nested = append(nested, more...)
		}
		one := &syntax.ListExpr{Lbrack: pos, List: []syntax.Expr{call(hUnp, pos, ident(t, pos), intLit(len(elems), pos))}, Rbrack: pos}
		return ident(t, pos), append([]syntax.Node{&syntax.ForClause{For: pos, Vars: lhs, In: pos, X: one}}, nested...), nil
	}
	return nil, nil, fmt.Errorf("%s: a comprehension that assigns to %s cannot be followed by provenance; assign to names", pos, describeTarget(vars))
}

func describeTarget(e syntax.Expr) string {
	switch e.(type) {
	case *syntax.IndexExpr:
		return "an element"
	case *syntax.DotExpr:
		return "a field"
	}
	return "this target"
}
