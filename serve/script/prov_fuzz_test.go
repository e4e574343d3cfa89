package script

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
)

// The label propagation is checked on random scripts over labelled
// inputs, two ways:
//
//   - noninterference: a script run twice, on untrusted inputs that
//     differ, must make the same trusted effects (sink's argument a, and
//     the sink calls themselves) in the same order, until one of the runs
//     stops (denied, or failed): no effect admitted may depend on
//     untrusted data;
//   - sameness: with every source trusted, a script does with labels
//     exactly what it does without them;
//   - the native path of plain loop arithmetic: a script does the same
//     with it and without it (withoutNative).
//
// TestProvenanceRandom runs a hundred scripts in every go test;
// FuzzProvenance searches further (go test -fuzz FuzzProvenance).

// chooser is where the generator's choices come from: a random source,
// or a fuzzer's bytes.
type chooser interface{ choose(n int) int }

type randChooser struct{ r *rand.Rand }

func (c randChooser) choose(n int) int { return c.r.IntN(n) }

type byteChooser struct {
	data []byte
	i    int
}

func (c *byteChooser) choose(n int) int {
	if c.i >= len(c.data) {
		return 0
	}
	b := c.data[c.i]
	c.i++
	return int(b) % n
}

type typ int

const (
	tS typ = iota
	tI
	tB
	tL
	tD
)

// gen writes a random, mostly valid script.
type gen struct {
	c      chooser
	b      strings.Builder
	indent string
	vars   map[typ][]string // variables of each type in scope
	loop   int              // loops open in the current function
	inFunc bool
	fresh  int
	budget int // statements left
}

func newGen(c chooser) *gen {
	return &gen{c: c, vars: map[typ][]string{}, budget: 40}
}

func (g *gen) line(format string, args ...any) {
	g.b.WriteString(g.indent)
	fmt.Fprintf(&g.b, format, args...)
	g.b.WriteByte('\n')
}

func (g *gen) pick(opts ...string) string { return opts[g.c.choose(len(opts))] }

func (g *gen) name(prefix string) string {
	g.fresh++
	return fmt.Sprintf("%s%d", prefix, g.fresh)
}

// varOf is a variable of type t, more often one the script changes
// than an input, so that changes made under control meet later reads.
func (g *gen) varOf(t typ) string {
	vs := g.vars[t]
	if len(vs) == 0 {
		return g.lit(t)
	}
	if g.c.choose(3) > 0 {
		var own []string
		for _, v := range vs {
			if strings.HasPrefix(v, "v") || strings.HasPrefix(v, "g") {
				own = append(own, v)
			}
		}
		if len(own) > 0 {
			return own[g.c.choose(len(own))]
		}
	}
	return vs[g.c.choose(len(vs))]
}

func (g *gen) lit(t typ) string {
	switch t {
	case tS:
		return g.pick(`"a"`, `"b"`, `"x"`, `""`)
	case tI:
		return g.pick("0", "1", "2", "3")
	case tB:
		return g.pick("True", "False")
	case tL:
		return g.pick(`[]`, `["a"]`, `["b", "a"]`)
	}
	return g.pick(`{}`, `{"k": "v"}`, `{"a": "b"}`)
}

func (g *gen) expr(t typ, depth int) string {
	if depth > 3 {
		if g.c.choose(2) == 0 {
			return g.lit(t)
		}
		return g.varOf(t)
	}
	d := depth + 1
	switch t {
	case tS:
		switch g.c.choose(18) {
		case 0:
			return g.lit(t)
		case 1, 2:
			return g.varOf(t)
		case 3:
			return g.expr(tS, d) + " + " + g.expr(tS, d)
		case 4:
			return fmt.Sprintf(`"%%s:%%d" %% (%s, %s)`, g.expr(tS, d), g.expr(tI, d))
		case 5:
			return "(" + g.expr(tS, d) + ").upper()"
		case 6:
			return "str(" + g.expr(tI, d) + ")"
		case 7:
			return `", ".join(` + g.expr(tL, d) + ")"
		case 8:
			return fmt.Sprintf("(%s if %s else %s)", g.expr(tS, d), g.expr(tB, d), g.expr(tS, d))
		case 9:
			return fmt.Sprintf(`(%s).get(%s, "z")`, g.expr(tD, d), g.expr(tS, d))
		case 10:
			l := g.expr(tL, d)
			return fmt.Sprintf(`(%s + ["e"])[%s %% (len(%s) + 1)]`, l, g.expr(tI, d), l)
		case 11:
			return fmt.Sprintf(`tool.call("peek", {"a": %s})["v"]`, g.expr(tS, d))
		case 12:
			return fmt.Sprintf("(%s)[:%s]", g.expr(tS, d), g.expr(tI, d))
		case 13:
			return fmt.Sprintf(`sorted(%s + ["e"], key=lambda x: %s)[0]`, g.expr(tL, d), g.pick("x.upper()", "x[::-1]", "len(x)", `(x if us == "a" else "")`))
		case 14:
			return fmt.Sprintf(`max(%s + ["e"])`, g.expr(tL, d))
		case 15:
			return fmt.Sprintf(`("t" if prov.trusted(%s) else "u")`, g.expr(tS, d))
		case 16:
			return fmt.Sprintf(`"n%%d" %% (%s)`, g.expr(tI, d))
		default:
			if !g.inFunc {
				return fmt.Sprintf("f0(%s, %s)", g.expr(tS, d), g.expr(tI, d))
			}
			return g.varOf(t)
		}
	case tI:
		switch g.c.choose(10) {
		case 0:
			return g.lit(t)
		case 1, 2:
			return g.varOf(t)
		case 3:
			return g.expr(tI, d) + " + " + g.expr(tI, d)
		case 4:
			return "len(" + g.expr(g.pickType(tS, tL, tD), d) + ")"
		case 5:
			return fmt.Sprintf("(%s if %s else %s)", g.expr(tI, d), g.expr(tB, d), g.expr(tI, d))
		case 6:
			return fmt.Sprintf("max(%s, %s)", g.expr(tI, d), g.expr(tI, d))
		case 7:
			s := g.expr(tS, d)
			return fmt.Sprintf("(%s + [%s]).index(%s)", g.expr(tL, d), s, s)
		case 8:
			return fmt.Sprintf("(%s * 2 - %s)", g.expr(tI, d), g.expr(tI, d))
		default:
			return fmt.Sprintf("len([x for x in %s if x != %s])", g.expr(tL, d), g.expr(tS, d))
		}
	case tB:
		switch g.c.choose(13) {
		case 10:
			return fmt.Sprintf("len(%s) %s %s", g.varOf(tL), g.pick("==", "<", ">"), g.expr(tI, d))
		case 11:
			return fmt.Sprintf("%s in %s", g.expr(tS, d), g.varOf(g.pickType(tL, tD)))
		case 12:
			return fmt.Sprintf("%s == %s", g.varOf(tI), g.expr(tI, d))
		case 0:
			return g.lit(t)
		case 1:
			return g.expr(tS, d) + " == " + g.expr(tS, d)
		case 2:
			return g.expr(tI, d) + " < " + g.expr(tI, d)
		case 3:
			return g.expr(tS, d) + " in " + g.expr(tL, d)
		case 4:
			return g.expr(tS, d) + " in " + g.expr(tD, d)
		case 5:
			return "(" + g.expr(tB, d) + " and " + g.expr(tB, d) + ")"
		case 6:
			return "(" + g.expr(tB, d) + " or " + g.expr(tB, d) + ")"
		case 7:
			return "not " + g.expr(tB, d)
		case 8:
			return "prov.trusted(" + g.expr(tS, d) + ")"
		default:
			return fmt.Sprintf("any([x == %s for x in %s])", g.expr(tS, d), g.expr(tL, d))
		}
	case tL:
		switch g.c.choose(13) {
		case 0:
			return g.lit(t)
		case 1, 2:
			return g.varOf(t)
		case 3:
			return "[" + g.expr(tS, d) + ", " + g.expr(tS, d) + "]"
		case 4:
			return g.expr(tL, d) + " + " + g.expr(tL, d)
		case 5:
			return "sorted(" + g.expr(tL, d) + ")"
		case 6:
			return fmt.Sprintf("[x + %s for x in %s]", g.expr(tS, d), g.expr(tL, d))
		case 7:
			return fmt.Sprintf("[x for x in %s if x %s %s]", g.expr(tL, d), g.pick("==", "!="), g.expr(tS, d))
		case 8:
			return "list((" + g.expr(tD, d) + ").keys())"
		case 9:
			return "(" + g.expr(tS, d) + `).split(",")`
		case 10:
			return "(" + g.expr(tL, d) + ")[1:]"
		case 11:
			return fmt.Sprintf("[k for k, v in (%s).items() if v != %s]", g.expr(tD, d), g.expr(tS, d))
		default:
			return fmt.Sprintf("sorted(%s, key=lambda x: x[::-1], reverse=%s)", g.expr(tL, d), g.expr(tB, d))
		}
	}
	switch g.c.choose(7) {
	case 0:
		return g.lit(t)
	case 1, 2:
		return g.varOf(t)
	case 3:
		return "{" + `"k": ` + g.expr(tS, d) + "}"
	case 4:
		return "{" + g.expr(tS, d) + ": " + g.expr(tS, d) + "}"
	case 5:
		l := g.expr(tL, d)
		return fmt.Sprintf("dict(zip(%s, %s))", l, g.expr(tL, d))
	default:
		return fmt.Sprintf("{x: %s for x in %s}", g.expr(tS, d), g.expr(tL, d))
	}
}

func (g *gen) pickType(ts ...typ) typ { return ts[g.c.choose(len(ts))] }

// assignable are the variables a statement here may assign: globals at
// the top level, a function's own locals in it.
func (g *gen) assignable(t typ) string {
	if g.inFunc {
		return ""
	}
	vs := g.vars[t]
	var own []string
	for _, v := range vs {
		if strings.HasPrefix(v, "v") {
			own = append(own, v)
		}
	}
	if len(own) == 0 {
		return ""
	}
	return own[g.c.choose(len(own))]
}

func (g *gen) block(depth int) {
	n := 1 + g.c.choose(3)
	for range n {
		g.stmt(depth)
	}
}

func (g *gen) stmt(depth int) {
	if g.budget <= 0 {
		g.line("pass")
		return
	}
	g.budget--
	choice := g.c.choose(19)
	if depth > 2 && choice >= 8 {
		choice %= 8
	}
	switch choice {
	case 0, 1:
		t := g.pickType(tS, tI, tL, tD)
		if v := g.assignable(t); v != "" {
			g.line("%s = %s", v, g.expr(t, 0))
			return
		}
		g.sink()
	case 2:
		if v := g.assignable(tS); v != "" {
			g.line("%s += %s", v, g.expr(tS, 0))
			return
		}
		g.sink()
	case 3:
		l := g.varOf(tL)
		if strings.HasPrefix(l, "[") {
			l = "gl"
		}
		switch g.c.choose(4) {
		case 0:
			g.line("%s.append(%s)", l, g.expr(tS, 0))
		case 1:
			g.line("%s.extend(%s)", l, g.expr(tL, 0))
		case 2:
			g.line("%s.insert(0, %s)", l, g.expr(tS, 0))
		default:
			g.line("%s += %s", l, g.expr(tL, 0))
		}
	case 4:
		d := g.varOf(tD)
		if strings.HasPrefix(d, "{") {
			d = "gd"
		}
		switch g.c.choose(3) {
		case 0:
			g.line("%s[%s] = %s", d, g.expr(tS, 0), g.expr(tS, 0))
		case 1:
			g.line("%s.update(%s)", d, g.expr(tD, 0))
		default:
			g.line("%s.pop(%s, None)", d, g.expr(tS, 0))
		}
	case 5, 6:
		g.sink()
	case 7:
		if g.loop > 0 {
			g.line("if %s:", g.expr(tB, 0))
			g.indent += "  "
			g.line("%s", g.pick("break", "continue"))
			g.indent = g.indent[2:]
			return
		}
		if !g.inFunc {
			g.line("g0(%s, %s)", g.pick("gl", "vl0", "vl1"), g.expr(tS, 0))
			return
		}
		g.sink()
	case 8, 9, 10:
		g.line("if %s:", g.expr(tB, 0))
		g.nested(depth)
		if g.c.choose(2) == 0 {
			g.line("elif %s:", g.expr(tB, 0))
			g.nested(depth)
		}
		if g.c.choose(2) == 0 {
			g.line("else:")
			g.nested(depth)
		}
	case 11, 12:
		x := g.name("x")
		g.line("for %s in %s:", x, g.expr(tL, 0))
		g.vars[tS] = append(g.vars[tS], x)
		g.loop++
		g.nested(depth)
		g.loop--
		g.vars[tS] = g.vars[tS][:len(g.vars[tS])-1]
	case 13:
		i := g.name("i")
		bound, plain := g.expr(tI, 0)+" % 3", g.c.choose(2) == 0
		if plain {
			bound = g.pick("1", "2", "3") // operations of its variable run natively
		}
		g.line("for %s in range(%s):", i, bound)
		if plain {
			g.indent += "  "
			switch v := g.assignable(tI); {
			case v != "" && g.c.choose(2) == 0:
				g.line("%s = %s * 2 - %s", v, i, g.lit(tI))
			default:
				g.line(`tool.call("sink", {"a": "n%%d" %% (%s + 1)})`, i)
			}
			g.indent = g.indent[2:]
		}
		g.vars[tI] = append(g.vars[tI], i)
		g.loop++
		g.nested(depth)
		g.loop--
		if !plain || depth > 0 || g.inFunc {
			// Read after the loop only where the loop surely bound it.
			g.vars[tI] = g.vars[tI][:len(g.vars[tI])-1]
		}
	case 14:
		if g.inFunc {
			g.sink()
			return
		}
		c := g.name("c")
		g.line("%s = 0", c)
		g.line("while %s < 3 and %s:", c, g.expr(tB, 0))
		g.indent += "  "
		g.line("%s += 1", c)
		g.indent = g.indent[2:]
		g.loop++
		g.nested(depth)
		g.loop--
	case 15:
		if g.inFunc {
			g.line("if %s:", g.expr(tB, 0))
			g.indent += "  "
			g.line("return %s", g.expr(tS, 0))
			g.indent = g.indent[2:]
			return
		}
		g.line("%s", g.pick("h0(us)", "h0(vs0)", "g0(vl0, us)"))
	default:
		if g.inFunc || depth > 0 {
			g.sink()
			return
		}
		g.gadget()
		g.budget -= 3
	}
}

// gadget writes one of the shapes an implicit flow takes: a change made
// (or not) under untrusted control, observed by a later branch that
// changes something else, which a sink then shows. The pieces vary.
func (g *gen) gadget() {
	x, y := g.pick("vl0", "vl1", "gl", "gm", `gn["k"]`, `gp["k"]`), g.pick("vl0", "vl1", "gd", "vd0", "gl", "gm", `gn["k"]`, `gp["k"]`)
	change := func(v string) string {
		switch {
		case strings.HasPrefix(v, "vd") || strings.HasPrefix(v, "gd"):
			return g.pick(v+`["k"] = "c"`, v+`.update({"k": "c"})`, v+`.setdefault("k", "c")`, v+`.pop("k", None)`)
		case v == "gl":
			return g.pick(`h0("c")`, `g0(gl, "c")`, `gl.append("c")`, `g0(*[gl, "c"])`, `gl.clear()`)
		case v == "gm":
			return g.pick(`h1("c")`, `h1("c")`, `g0(gm, "c")`)
		case strings.HasPrefix(v, "g"):
			d := v[:2]
			return g.pick(v+`.append("c")`, `g0(`+v+`, "c")`, v+` += ["c"]`, d+`.update({"k": `+v+` + ["c"]})`)
		}
		return g.pick(v+`.append("c")`, v+`.insert(0, "c")`, v+` += ["c"]`, v+`.extend(["c"])`, `g0(`+v+`, "c")`, v+`.clear()`, `g0(*[`+v+`, "c"])`)
	}
	observe := func(v string) string {
		return g.pick("len("+v+") == 0", "len("+v+") > 1", `"c" in `+v, v+" == []")
	}
	cond := g.pick(`us == "a"`, `"a" in ul`, `len(ul) > 1`, `ui > 2`, `"k" in ud`, `us`, `not us`)
	switch g.c.choose(5) {
	case 0: // a branch
		g.line("if %s:", cond)
		g.line("  %s", change(x))
		if g.c.choose(2) == 0 {
			g.line("else:")
			g.line("  %s", change(y))
		}
	case 1: // a loop left early
		g.line("for x in %s:", g.pick(`["a", "b"]`, "tl", "ul"))
		g.line("  if %s:", g.pick(cond, `x == us`, `x in ul`))
		g.line("    %s", g.pick("break", "continue"))
		g.line("  %s", change(x))
	case 2: // a function returning early, or called with spread data
		g.line("r%d = %s", g.fresh, g.pick("f1(us)", "f1(*[us])", "f1(*ul[:1] + [\"b\"][:1 - len(ul[:1])])"))
		g.fresh++
	case 3: // a loop over untrusted data
		g.line("for x in %s:", g.pick("ul", "ud", "us.split(\",\")"))
		g.line("  %s", change(x))
	default: // a conditional expression choosing a container
		g.line("(%s if %s else %s).append(\"c\")", x, cond, y)
	}
	g.line("if %s:", observe(x))
	g.line("  %s", change(y))
	g.line(`tool.call("sink", {"a": len(%s)})`, y)
}

func (g *gen) nested(depth int) {
	g.indent += "  "
	g.block(depth + 1)
	g.indent = g.indent[2:]
}

// sink is an effect: argument a must be trusted, b may be anything.
func (g *gen) sink() {
	a := g.expr(g.pickType(tS, tI, tL), 0)
	if g.c.choose(2) == 0 {
		a = g.pick("len(vl0)", "len(vl1)", "len(gl)", "vs0", "vi0", "len(vd0)", "sorted(vl1)")
	}
	b := g.expr(g.pickType(tS, tI, tL, tD), 0)
	switch g.c.choose(3) {
	case 0:
		g.line(`tool.call("sink", {"a": %s})`, a)
	case 1:
		g.line(`tool.call("sink", {"b": %s})`, b)
	default:
		g.line(`tool.call("sink", {"a": %s, "b": %s})`, a, b)
	}
}

// script is a whole random script: inputs, globals, three functions (one
// returning early, one mutating its argument, one a global), then
// statements.
func (g *gen) script() string {
	for _, in := range []string{"us", "ui", "ul", "ud"} {
		g.line(`%s = tool.call("src", {"key": %q})["v"]`, in, in)
	}
	for _, in := range []string{"ts", "ti", "tl", "td"} {
		g.line(`%s = tool.call("clean", {"key": %q})["v"]`, in, in)
	}
	g.line(`vs0, vs1, vi0, vi1 = "", "q", 0, 1`)
	g.line(`vl0, vl1, vd0, vd1 = [], ["p"], {}, {"k": "v"}`)
	g.line(`gl, gm, gd, gn, gp = [], [], {}, {"k": []}, {"k": []}`)
	g.vars[tS] = []string{"us", "ts", "vs0", "vs1"}
	g.vars[tI] = []string{"ui", "ti", "vi0", "vi1"}
	g.vars[tL] = []string{"ul", "tl", "vl0", "vl1", "gl"}
	g.vars[tD] = []string{"ud", "td", "vd0", "vd1", "gd"}
	g.line("def g0(l, s):")
	g.line("  l.append(s)")
	g.line("def h0(s):")
	g.line("  gl.append(s)")
	g.line("def h1(s):")
	g.line("  h2(s)")
	g.line("def h2(s):")
	g.line("  gm.append(s)")
	g.line("def f1(p):")
	g.line("  if p == \"a\":")
	g.line("    return \"r\"")
	g.line("  gl.append(\"f\")")
	g.line("  return \"s\"")
	g.line("def f0(p, n):")
	saved := g.vars
	g.vars = map[typ][]string{tS: append([]string{"p"}, saved[tS]...), tI: append([]string{"n"}, saved[tI]...), tL: saved[tL], tD: saved[tD]}
	g.inFunc = true
	g.indent = "  "
	g.budget = 6
	g.block(1)
	g.line("return %s", g.expr(tS, 1))
	g.indent = ""
	g.inFunc = false
	g.vars = saved
	g.budget = 30
	if g.c.choose(3) == 0 {
		for range 1 + g.c.choose(4) {
			g.gadget()
		}
	}
	for range 6 + g.c.choose(8) {
		g.stmt(0)
	}
	g.line("result = [gl, gd, vs0, vs1, vi0, vi1, vl0, vl1, vd0, vd1]")
	return g.b.String()
}

// randomData is untrusted input of the shapes the generator assumes.
func randomData(c chooser) map[string]any {
	strs := []string{"a", "b", "evil", "", "x"}
	s := func() string { return strs[c.choose(len(strs))] }
	l := []any{}
	for range c.choose(4) {
		l = append(l, s())
	}
	d := map[string]any{}
	for range c.choose(3) {
		d[[]string{"k", "a", "x"}[c.choose(3)]] = s()
	}
	return map[string]any{
		"us": s(), "ui": c.choose(5), "ul": l, "ud": d,
		"ts": "t", "ti": 2, "tl": []any{"a", "t"}, "td": map[string]any{"k": "t"},
	}
}

// runOutcome is what a run did: the sinks it reached, how it ended, its
// result and the untrusted sources of that.
type runOutcome struct {
	sunk    []map[string]any
	code    fault.Code
	err     error
	value   string
	sources []string
}

func (f *provFixture) outcome(t testing.TB, src string, p *Provenance) runOutcome {
	res, err := f.run(t, src, p, nil)
	f.mu.Lock()
	defer f.mu.Unlock()
	var sunk []map[string]any
	for _, s := range f.sunk {
		// Through JSON, so that numbers compare the same way.
		data, _ := json.Marshal(s)
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		sunk = append(sunk, m)
	}
	return runOutcome{sunk: sunk, code: fault.CodeOf(err), err: err, value: string(res.Value), sources: res.Sources}
}

// checkScript runs the two checks on one script.
func checkScript(t *testing.T, src string, d1, d2 map[string]any) {
	t.Helper()
	allTrusted := &Provenance{Trusted: []string{"tool:src", "tool:clean", "tool:peek"}, Tools: map[string]map[string]Rule{"sink": {"b": {Any: true}}}}
	off := provOff
	f1 := newProvFixture(t, d1)
	plain, labelled := f1.outcome(t, src, off), f1.outcome(t, src, allTrusted)
	for _, o := range []runOutcome{plain, labelled} {
		if o.code == fault.Internal {
			t.Fatalf("internal failure: %v\n%s", o.err, src)
		}
	}
	if plain.code == fault.Limit || labelled.code == fault.Limit {
		// The labelled program takes more steps, time and memory: a run
		// at a bound says nothing of labels. (A string doubled in nested
		// loops is the generator's usual way there.)
		return
	}
	if (plain.err == nil) != (labelled.err == nil) || plain.value != labelled.value || !reflect.DeepEqual(plain.sunk, labelled.sunk) {
		t.Fatalf("labels changed what the script does:\nwithout: %v %s %v\nwith:    %v %s %v\n%s", plain.err, plain.value, plain.sunk, labelled.err, labelled.value, labelled.sunk, src)
	}
	policy := &Provenance{Trusted: []string{"tool:clean"}, Tools: map[string]map[string]Rule{"sink": {"b": {Any: true}}}}
	f2 := newProvFixture(t, d2)
	r1, r2 := f1.outcome(t, src, policy), f2.outcome(t, src, policy)
	for _, o := range []runOutcome{r1, r2} {
		if o.code == fault.Internal {
			t.Fatalf("internal failure: %v\n%s", o.err, src)
		}
	}
	if u := withoutNative(src); u != src {
		if r := f1.outcome(t, u, policy); !reflect.DeepEqual(r.sum(), r1.sum()) {
			t.Fatalf("the native path changed what the script does:\nwith:    %v\nwithout: %v\n%s", r1.sum(), r.sum(), src)
		}
	}
	a1, a2 := trustedParts(r1.sunk), trustedParts(r2.sunk)
	n := min(len(a1), len(a2))
	if !reflect.DeepEqual(a1[:n], a2[:n]) {
		t.Fatalf("an admitted effect depends on untrusted data:\nrun 1 (%v): %v\nrun 2 (%v): %v\ndata 1 %v\ndata 2 %v\n%s", r1.err, a1, r2.err, a2, d1, d2, src)
	}
}

// trustedParts are what the policy requires trusted of the sink calls:
// the calls given an argument a, and its value. A call given only b
// (which may take anything) may be made under untrusted control.
func trustedParts(sunk []map[string]any) []any {
	out := []any{}
	for _, s := range sunk {
		if a, ok := s["a"]; ok {
			out = append(out, fmt.Sprint(a))
		}
	}
	return out
}

func TestProvenanceRandom(t *testing.T) {
	first, n := 0, 100
	if testing.Short() {
		n = 60
	}
	if soak := os.Getenv("CAPKIT_PROV_SOAK"); soak != "" {
		// An opt-in soak: CAPKIT_PROV_SOAK=FIRST:N runs N scripts from seed FIRST.
		if _, err := fmt.Sscanf(soak, "%d:%d", &first, &n); err != nil {
			t.Fatalf("CAPKIT_PROV_SOAK=%q: want FIRST:N", soak)
		}
	}
	for seed := first; seed < first+n; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		src := newGen(randChooser{r}).script()
		checkScript(t, src, randomData(randChooser{r}), randomData(randChooser{r}))
	}
}

func FuzzProvenance(f *testing.F) {
	for seed := range 8 {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		b := make([]byte, 256)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &byteChooser{data: data}
		src := newGen(c).script()
		checkScript(t, src, randomData(c), randomData(c))
	})
}
