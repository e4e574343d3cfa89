package script

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// TestProvPlainAttacks attacks the native path of plain loop arithmetic
// (an operation of literals and of a range loop's variable, read in the
// loop's own body, runs without its helper): a loop whose bound, start or
// step is data, a loop over data, nested loops under a data bound, break,
// continue and return on data, a count kept in the loop, the variable
// bound again or shadowed, read after the loop or by a function, enumerate,
// zip, comprehensions, conditional expressions, and/or. Each script runs
// with its data untrusted and trusted, and each of those twice: as written
// and with every loop's range(ARGS) written range(*[ARGS]), which the
// rewrite does not take for a range of plain operands, so every operation
// goes through its helper as before the native path. The two must do
// exactly the same (the same failure code, the same calls reaching the
// sink, the same result and the same untrusted sources of it), and the
// untrusted run must end as want says. native says whether the script
// has an operation the native path takes (fewer helper calls than the
// range(*[ARGS]) form), so a case meant to exercise it does.
func TestProvPlainAttacks(t *testing.T) {
	f := newProvFixture(t, constructData)
	pol := f.provPolicy()
	pol.Trusted = append(pol.Trusted, "tool:peek")
	sink := func(x string) string { return "\n" + `tool.call("sink", {"a": ` + x + `})` + "\n" }
	const (
		denied   = "denied"   // the untrusted run is refused at a sink
		labelled = "labelled" // the untrusted run's result depends on the untrusted source
		trusted  = "trusted"  // the untrusted run is allowed, its result trusted
	)
	cases := []struct {
		name, src, want string
		native          bool
	}{
		// A range of data: its variable's values and count reveal it.
		{"range of data, its variable's arithmetic", "x = 0\nfor i in range(n):\n  x = i + 1" + sink("x"), denied, false},
		{"range of data, its variable to a sink in the body", "for i in range(n):\n  tool.call(\"sink\", {\"a\": \"f%d\" % (i * 2)})", denied, false},
		{"range of a data list's length", "x = \"\"\nfor i in range(len(l)):\n  x = \"item-%d\" % (i + 1)" + sink("x"), denied, false},
		{"range from a data start", "out = []\nfor i in range(n, 10):\n  out.append(i * 2)" + sink("out[0]"), denied, false},
		{"range with a data step", "out = []\nfor i in range(0, 10, n):\n  out.append(i + 1)" + sink("len(out)"), denied, false},
		{"range of data arithmetic", "x = 0\nfor i in range(n + 1):\n  x = i - 1" + sink("x"), denied, false},
		{"a loop over data", "c = \"\"\nfor e in l:\n  c = c + \"k\"" + sink("c"), denied, false},
		// Nested loops.
		{"a literal range under a data-bounded loop", "x = 0\nfor i in range(n):\n  for j in range(2):\n    x = j + 1" + sink("x"), denied, true},
		{"a literal range's variable to a sink under a data-bounded loop", "for i in range(n):\n  for j in range(2):\n    tool.call(\"sink\", {\"a\": \"f%d\" % (j + 1)})", denied, true},
		{"a range of a data-bounded loop's variable", "x = 0\nfor i in range(n):\n  for j in range(i + 1):\n    x = j * 2" + sink("x"), denied, false},
		{"a range of a literal loop's variable, breaking on data", "x = 0\nfor i in range(4):\n  for j in range(i + 1):\n    if j == n:\n      break\n    x = i * 10 + j" + sink("x"), denied, true},
		{"an inner variable read in the outer body after a break on data", "x = 0\nfor i in range(3):\n  y = i * 2\n  for j in range(4):\n    if j == n:\n      break\n  x = j + i" + sink("x"), denied, true},
		// break, continue and return on data: how far the loop got.
		{"a count after a break on data", "c = 0\nfor i in range(10):\n  if i == n:\n    break\n  c = i + 1" + sink("c"), denied, true},
		{"the variable after a break on data", "for i in range(10):\n  j = i * 2\n  if i == n:\n    break" + sink("i * 2"), denied, true},
		{"a long range ended by data", "steps = 0\nfor i in range(100):\n  if i >= n:\n    break\n  steps = i + 1" + sink("steps"), denied, true},
		{"a sink in the body after a break on data", "for i in range(10):\n  if i == n:\n    break\n  tool.call(\"sink\", {\"a\": \"f-%d\" % (i + 1)})", denied, true},
		{"a continue on data, then the variable", "x = \"none\"\nfor i in range(5):\n  if i < n:\n    continue\n  x = \"f%d\" % i" + sink("x"), denied, true},
		{"a condition on the variable after a continue on data", "x = 0\nfor i in range(5):\n  if i == n:\n    continue\n  if i * 2 > 4:\n    x = 1" + sink("x"), denied, true},
		{"a value carried across a continue on data", "prev = 0\nfor i in range(5):\n  tool.call(\"sink\", {\"a\": \"p%d\" % prev})\n  if i == n:\n    continue\n  prev = i + 1", denied, true},
		{"a return from the body on data", "def f():\n  for i in range(5):\n    if i == n:\n      return i + 1\n  return 0" + sink("f()"), denied, true},
		{"a function's variable returned after a break on data", "def f():\n  for i in range(5):\n    k = i * 2\n    if i == n:\n      break\n  return i * 2" + sink("f()"), denied, true},
		{"a parameter rebound by a range, left on data", "def f(i):\n  for i in range(5):\n    if i == n:\n      break\n  return i" + sink("f(0)"), denied, false},
		{"a dict filled until a break on data", "m = {}\nfor i in range(5):\n  if i == n:\n    break\n  m[i * 2] = i + 1" + sink("len(m)"), denied, true},
		{"a list filled under a condition on data", "out = []\nfor i in range(5):\n  if i < n:\n    out.append(i * 10)" + sink("len(out)"), denied, true},
		{"a sink under a condition on the variable and data", "for i in range(5):\n  if i + 1 == n:\n    tool.call(\"sink\", {\"a\": \"hit-%d\" % i})", denied, true},
		{"a count kept with += until a break on data", "k = 0\nfor i in range(5):\n  if i == n:\n    break\n  k += i * 2" + sink("k"), denied, true},
		{"a while loop on the variable and data", "x = 0\nfor i in range(3):\n  k = 0\n  while k < i + n:\n    k += i + 1\n  x = k * 2" + sink("x"), denied, true},
		{"a read-only call's result compared with data", "x = \"\"\nfor i in range(3):\n  x = tool.call(\"peek\", {\"a\": \"k%d\" % (i + 1)})[\"v\"]\n  if x == u:\n    break" + sink("x"), denied, true},
		{"the result after a break on data", "out = []\nfor i in range(5):\n  if i == n:\n    break\n  out.append(\"r%d\" % (i + 1))\nresult = out", labelled, true},
		{"the result counted under data", "c = 0\nfor i in range(5):\n  if b:\n    c = i + 1\nresult = c", labelled, true},
		// The variable bound again, shadowed, or read by a function.
		{"the variable incremented by data", "for i in range(5):\n  i += n" + sink("i"), denied, false},
		{"the variable rebound from data in the body", "x = 0\nfor i in range(3):\n  x = i + 1\n  i = n" + sink("i + x"), denied, false},
		{"the variable rebound by a later loop over data", "x = 0\nfor i in range(3):\n  x = i + 1\nfor i in l:\n  pass" + sink(`"%s%d" % (i, x)`), denied, false},
		{"a function reading the global variable after a break on data", "def g():\n  return i + 1\nfor i in range(3):\n  y = i * 2\n  if i == n:\n    break" + sink("g()"), denied, true},
		{"a function reading the global variable in the body", "def g():\n  return i + 1\nx = 0\nfor i in range(5):\n  y = i * 2\n  x = g()\n  if i == n:\n    break" + sink("x"), denied, true},
		{"range shadowed by a function of data", "def range(k):\n  return [k, n]\nx = 0\nfor i in range(3):\n  x = i + 1" + sink("x"), denied, false},
		{"a lambda made in the body, called after a break on data", "g = None\nfor i in range(5):\n  g = lambda: i * 2\n  if i == n:\n    break" + sink("g()"), denied, false},
		{"a function defined in the body, called after a break on data", "for i in range(5):\n  def g():\n    return i * 2\n  if i == n:\n    break" + sink("g()"), denied, false},
		{"a function default made in the body", "fs = []\nfor i in range(5):\n  if i == n:\n    break\n  fs.append(lambda k=i + 1: k)" + sink("fs[0]()"), denied, true},
		{"a loop in a function called under data", "def f():\n  x = 0\n  for i in range(3):\n    x = i + 1\n  return x\nr = 0\nif b:\n  r = f()" + sink("r"), denied, true},
		{"a literal range under a condition on data", "if b:\n  for i in range(2):\n    tool.call(\"sink\", {\"a\": \"f%d\" % i})", denied, true},
		// enumerate, zip, comprehensions.
		{"enumerate of data", "x = 0\nfor i, e in enumerate(l):\n  x = i + 1" + sink("x"), denied, false},
		{"zip of a range and data", "x = 0\nfor i, e in zip(range(5), l):\n  x = i + 1" + sink("x"), denied, false},
		{"a comprehension over data in the body", "ys = []\nfor i in range(3):\n  z = i * 2\n  ys = [i + j for j in range(n)]" + sink("ys[0]"), denied, true},
		{"a comprehension of the variable after a break on data", "ys = []\nfor i in range(5):\n  z = i * 2\n  if i == n:\n    break\n  ys = [i + 1 for k in range(2)]" + sink("ys[0]"), denied, true},
		// Operations of the variable beside data.
		{"a conditional expression on data", "x = 0\nfor i in range(5):\n  x = i + 1 if u == \"evil.txt\" else i - 1" + sink("x"), denied, true},
		{"and of data", "x = 0\nfor i in range(3):\n  x = b and i + 1" + sink("x"), denied, true},
		{"or falling to data", "x = 0\nfor i in range(3):\n  x = i * 0 or n" + sink("x"), denied, true},
		{"data indexed by the variable", "x = \"\"\nfor i in range(3):\n  x = l[i] + \"%d\" % i" + sink("x"), denied, true},
		{"literals repeated under a condition on data", "s = \"\"\nfor i in range(3):\n  if b:\n    s = s + \"a\" * (i + 1)" + sink("s"), denied, true},
		{"a data template beside the variable", "x = \"\"\nfor i in range(3):\n  x = u + \"-%d\" % i" + sink("x"), denied, true},
		{"a comparison of the variable kept after a break on data", "ok = False\nfor i in range(5):\n  if i == n:\n    break\n  ok = i < 2" + sink("ok"), denied, true},
		// What does not depend on data stays trusted, both ways.
		{"a literal range's arithmetic beside data", "out = []\nfor i in range(3):\n  y = u.upper()\n  out.append(\"item-%d\" % (i + 1))" + sink("out[2]"), trusted, true},
		{"a literal range's variable after the loop", "y = 0\nfor i in range(3):\n  y = i * 2" + sink("i + y"), trusted, true},
		{"nested literal ranges", "x = 0\nfor i in range(3):\n  for j in range(i + 1):\n    x = i * j" + sink("x"), trusted, true},
		{"a parameter of data rebound by a range", "def f(i):\n  for i in range(3):\n    x = i + 1\n  return x" + sink("f(n)"), trusted, false},
		{"a sink after an inner loop that breaks on data", "for i in range(3):\n  for j in range(3):\n    if j == n:\n      break\n  tool.call(\"sink\", {\"a\": \"%d\" % (i + 1)})", trusted, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			unplain := withoutNative(c.src)
			if n, m := helperCalls(t, constructPrefix+c.src), helperCalls(t, constructPrefix+unplain); c.native != (n < m) || n > m {
				t.Fatalf("%d helper calls, %d without the native path: native %v, want %v", n, m, n < m, c.native)
			}
			for _, src := range []string{"src", "clean"} {
				script := strings.ReplaceAll(constructPrefix+c.src, "SRC", src)
				got := f.outcome(t, script, pol)
				if before := f.outcome(t, strings.ReplaceAll(constructPrefix+unplain, "SRC", src), pol); !reflect.DeepEqual(got.sum(), before.sum()) {
					t.Fatalf("from %s: %v, without the native path %v", src, got.sum(), before.sum())
				}
				if src == "clean" {
					if got.err != nil || len(got.sources) > 0 {
						t.Fatalf("from the trusted source: %v, result from %v", got.err, got.sources)
					}
					continue
				}
				switch c.want {
				case denied:
					if got.code != fault.Denied {
						t.Fatalf("from the untrusted source: %v, want denied", got.err)
					}
				case labelled:
					if got.err != nil || !reflect.DeepEqual(got.sources, []string{"src"}) {
						t.Fatalf("from the untrusted source: %v, result from %v, want src", got.err, got.sources)
					}
				case trusted:
					if got.err != nil || len(got.sources) > 0 {
						t.Fatalf("from the untrusted source: %v, result from %v, want allowed and trusted", got.err, got.sources)
					}
				}
			}
		})
	}
}

// withoutNative is src with every loop's range(ARGS) written
// range(*[ARGS]): the same program, and the same to the rewrite's
// analysis, but a range whose operands the rewrite does not know plain,
// so that every operation goes through its helper. (ARGS may hold no
// parenthesis in a string.)
func withoutNative(src string) string {
	var b strings.Builder
	for {
		i := strings.Index(src, "in range(")
		if i < 0 {
			break
		}
		i += len("in range(")
		depth, j := 1, i
		for ; j < len(src) && depth > 0; j++ {
			switch src[j] {
			case '(':
				depth++
			case ')':
				depth--
			}
		}
		b.WriteString(src[:i] + "*[" + src[i:j-1] + "]")
		src = src[j-1:]
	}
	return b.String() + src
}

// sum is what two runs must agree on (a message names positions).
func (r runOutcome) sum() []any {
	return []any{r.code, r.sunk, r.value, r.sources}
}

// helperCalls is how many $bin and $un calls src's rewrite makes.
func helperCalls(t *testing.T, src string) int {
	t.Helper()
	file, err := fileOptions.Parse("s.star", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	predeclared := starlark.StringDict{"tool": starlark.None, "prov": starlark.None, "json": starlark.None, "math": starlark.None}
	if err := resolve.File(file, predeclared.Has, starlark.Universe.Has); err != nil {
		t.Fatal(err)
	}
	out, _, _, err := rewrite(context.Background(), file, limits.ScriptProvenanceAnalysisSteps)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	syntax.Walk(out, func(n2 syntax.Node) bool {
		if call, ok := n2.(*syntax.CallExpr); ok {
			if id, ok := call.Fn.(*syntax.Ident); ok && (id.Name == hBin || id.Name == hUn) {
				n++
			}
		}
		return true
	})
	return n
}
