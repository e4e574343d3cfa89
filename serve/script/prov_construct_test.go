package script

import (
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
)

// constructData is what both src (untrusted) and clean (trusted) return.
var constructData = map[string]any{
	"u": "evil.txt",
	"n": 3,
	"l": []any{"y", "x", "z"},
	"d": map[string]any{"path": "p.txt", "k": []any{"z"}, "rank": map[string]any{"p": 2, "q": 1}},
	"b": true,
}

// constructPrefix reads every datum from SRC.
const constructPrefix = `u = tool.call("SRC", {"key": "u"})["v"]
n = tool.call("SRC", {"key": "n"})["v"]
l = tool.call("SRC", {"key": "l"})["v"]
d = tool.call("SRC", {"key": "d"})["v"]
b = tool.call("SRC", {"key": "b"})["v"]
`

// TestProvConstructs runs each Starlark construct with its data from an
// untrusted source and then from a trusted one: the sink's trusted
// argument is refused the first and takes the second, so a refusal is
// the label's doing, not the script's. Each case names the construct the
// value goes through on its way to the sink.
func TestProvConstructs(t *testing.T) {
	f := newProvFixture(t, constructData)
	// peek, which returns its argument, is trusted too: what it returns
	// depends on what it was given.
	pol := f.provPolicy()
	pol.Trusted = append(pol.Trusted, "tool:peek")
	sink := func(x string) string { return "\n" + `tool.call("sink", {"a": ` + x + `})` + "\n" }
	cases := []struct{ name, src string }{
		// Values, operators and built-ins.
		{"slice", sink("u[1:4]")},
		{"index of a string", sink("u[0]")},
		{"repetition", sink("u * 2")},
		{"arithmetic", sink("n * 10 + 1")},
		{"comparison", sink("n > 2")},
		{"membership", sink(`"evil" in u`)},
		{"not", sink("not b")},
		{"str of a list", sink("str(l)")},
		{"repr", sink("repr(u)")},
		{"int of a string", sink(`int("1" + str(n))`)},
		{"format method", sink(`"{}/{}".format("dir", u)`)},
		{"percent with a dict", sink(`"%(p)s" % {"p": u}`)},
		{"join", sink(`"-".join(["a", u, "b"])`)},
		{"split", sink(`u.split(".")[0]`)},
		{"replace", sink(`"x.txt".replace("x", u)`)},
		{"method via getattr", sink(`getattr(u, "upper")()`)},
		{"len", sink("len(l)")},
		{"range over a length", sink("list(range(n))")},
		{"any", sink(`any([x == "x" for x in l])`)},
		{"all", sink(`all([b, True])`)},
		{"min", sink("min(l)")},
		{"max with a key", sink(`max(["p", "q"], key=lambda k: d["rank"][k])`)},
		{"reversed", sink("list(reversed(l))[0]")},
		{"enumerate", sink("[i for i, x in enumerate(l) if x == 'x'][0]")},
		{"zip", sink(`list(zip(["a", "b"], l))[0][1]`)},
		{"tuple unpacking", "p, q, r = l" + sink("q")},
		{"augmented assignment", `x = "dir/"` + "\nx += u" + sink("x")},
		{"list of a tuple", sink("list(tuple(l))[2]")},
		{"dict()", sink(`dict([("k", u)])["k"]`)},
		{"dict.get default", sink(`{}.get("missing", u)`)},
		{"dict.items", sink(`[v for k, v in d.items() if k == "path"][0]`)},
		{"dict.values", sink(`sorted([str(v) for v in d.values()])[0]`)},
		{"dict.pop", "e = dict(d)" + sink(`e.pop("path")`)},
		{"list.pop", "m = list(l)" + sink("m.pop()")},
		{"list.index", sink(`l.index("x")`)},
		{"key from data", sink(`{"evil.txt": "a", "other": "b"}[u]`)},
		{"json", sink(`json.decode(json.encode({"v": u}))["v"]`)},
		// Labels survive tool results that are lists and dicts, and
		// results of tools called with labelled arguments.
		{"nested dict in a result", sink(`d["rank"]["p"]`)},
		{"list in a dict result", sink(`d["k"][0]`)},
		{"list result", sink("l[-1]")},
		{"a trusted tool's result of labelled arguments", sink(`tool.call("peek", {"a": [u]})["v"][0]`)},
		{"a trusted tool's result chosen by data", sink(`tool.call("peek", {"a": ["p", "q"][l.index("x")]})["v"]`)},
		{"whole result", sink(`tool.call("src" if "SRC" == "src" else "clean", {"key": "l"})`)},
		// Sorting by an untrusted key: a trusted list, reordered.
		{"sorted by an untrusted key", sink(`sorted(["p", "q"], key=lambda k: d["rank"][k])[0]`)},
		{"sorted reverse from data", sink(`sorted(["a", "b"], reverse=b)[0]`)},
		{"sorted untrusted list", sink("sorted(l)[0]")},
		// Implicit flows: what a branch did, or did not do, because of data.
		{"if assigns", `x = "a"` + "\nif b:\n  x = \"b\"" + sink("x")},
		{"else assigns", `x = "a"` + "\nif not b:\n  pass\nelse:\n  x = \"b\"" + sink("x")},
		{"elif", `x = "a"` + "\nif n == 1:\n  x = \"b\"\nelif n == 3:\n  x = \"c\"" + sink("x")},
		{"branch not taken", `x = "a"` + "\nif n == 99:\n  x = \"b\"" + sink("x")},
		{"continue on data", "c = 0\nfor i in range(5):\n  if i < n:\n    continue\n  c += 1" + sink("c")},
		{"a range's variable after a break on data", "for i in range(5):\n  if i == n:\n    break" + sink(`"%d" % (i + 1)`)},
		{"a range's variable in the body, under data", "x = 0\nfor i in range(5):\n  if i == n:\n    x = i * 2" + sink("x")},
		{"a range's variable read by a function later", "fs = []\nfor i in range(5):\n  fs.append(lambda: i + 1)\n  if i == n:\n    break" + sink("fs[0]()")},
		{"loop over data, trusted body", "c = 0\nfor x in l:\n  c += 1" + sink("c")},
		{"comprehension filter", sink(`[x for x in ["p", "q"] if x in u]`)},
		{"or", sink(`u or "fallback"`)},
		{"and of a literal", sink(`b and "yes"`)},
		{"conditional of literals", sink(`"yes" if n > 1 else "no"`)},
		{"dict membership in a branch", `x = 0` + "\nif \"path\" in d:\n  x = 1" + sink("x")},
		{"mutation of a trusted dict", "m = {}\nif b:\n  m[\"k\"] = 1" + sink("len(m)")},
		{"mutation of a trusted list", "m = []\nif b:\n  m.append(1)" + sink("m")},
		{"a global list a function fills", "g = []\ndef add():\n  g.append(1)\nif b:\n  add()" + sink("len(g)")},
		{"a comprehension's filter with an effect", "calls = []\nx = [calls.append(1) for e in l if e == 'x']" + sink("len(calls)")},
		{"a sort key with an effect", "calls = []\ndef k(e):\n  if e == 'x':\n    calls.append(1)\n  return 0\nx = sorted(l, key=k)" + sink("len(calls)")},
		{"a default list mutated under data", "g = []\ndef f(x=g):\n  x.append(1)\nif b:\n  f()" + sink("len(g)")},
		{"a nested list through an alias", "s = {'x': {'y': []}}\ninner = s['x']['y']\nif b:\n  inner.append(1)" + sink("len(s['x']['y'])")},
		{"remove under data", "s = ['a', 'b']\nif b:\n  s.remove('a')" + sink("s[0]")},
		{"insert under data", "s = ['a', 'b']\nif b:\n  s.insert(0, 'c')" + sink("s[0]")},
		{"clear under data", "s = {'a': 1}\nif b:\n  s.clear()" + sink("len(s)")},
		{"state shared by two closures", "def mk():\n  box = []\n  def add():\n    box.append(1)\n  def size():\n    return len(box)\n  return add, size\nadd, size = mk()\nif b:\n  add()" + sink("size()")},
		{"a while loop's exit", "v = 0\nwhile v < 10:\n  if v == n:\n    break\n  v += 1" + sink("v")},
		// Functions and closures.
		{"deep calls", "def f(x):\n  return g(x)\ndef g(x):\n  return h(x)\ndef h(x):\n  return x[:1]" + sink("f(u)")},
		{"closure returns a captured value", "def outer(v):\n  def inner():\n    return v\n  return inner\nc = outer(u)" + sink("c()")},
		{"closure called under data", "def mk():\n  return lambda: \"t\"\nf = mk()\nx = \"f\"\nif b:\n  x = f()" + sink("x")},
		{"closure fills a list", "def outer():\n  acc = []\n  def push(x):\n    acc.append(x)\n  push(u)\n  return acc\n" + sink("outer()[0]")},
		{"keyword argument", "def f(a=\"\", b=\"\"):\n  return b" + sink("f(b=u)")},
		{"varargs", "def f(*xs):\n  return xs[1]" + sink(`f("a", u)`)},
		{"kwargs", "def f(**kw):\n  return kw[\"x\"]" + sink("f(x=u)")},
		{"return chosen by data", "def f():\n  if b:\n    return \"t\"\n  return \"f\"" + sink("f()")},
		{"return in a loop", "def f():\n  for x in l:\n    if x == \"x\":\n      return \"found\"\n  return \"none\"" + sink("f()")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, src := range []string{"src", "clean"} {
				script := strings.ReplaceAll(constructPrefix+c.src, "SRC", src)
				_, err := f.run(t, script, pol, nil)
				if src == "src" && fault.CodeOf(err) != fault.Denied {
					t.Fatalf("from the untrusted source: %v, want denied", err)
				}
				if src == "clean" && err != nil {
					t.Fatalf("from the trusted source: %v", err)
				}
			}
		})
	}
}

// TestProvConstructsPrecise: with untrusted data around, a value that
// does not depend on it stays trusted, so labels do not cost utility
// where nothing flows.
func TestProvConstructsPrecise(t *testing.T) {
	f := newProvFixture(t, constructData)
	prefix := strings.ReplaceAll(constructPrefix, "SRC", "src")
	sink := func(x string) string { return "\n" + `tool.call("sink", {"a": ` + x + `})` + "\n" }
	cases := []struct{ name, src string }{
		{"a function ignoring its argument", "def f(x):\n  return \"v\"" + sink("f(u)")},
		{"a trusted element of a list", sink(`[u, "t"][1]`)},
		{"a trusted member of a dict", sink(`{"a": u, "b": "t"}["b"]`)},
		{"after a branch on data", "x = 1\nif b:\n  y = 2" + sink("x")},
		{"after a loop over data", "x = 1\nfor e in l:\n  y = e" + sink("x")},
		{"a literal beside labelled work", "y = u.upper()" + sink(`"out.txt"`)},
		{"a trusted list's length after a loop over data", "m = [1, 2]\nfor e in l:\n  y = e" + sink("len(m)")},
		{"after an inner loop that breaks on data", "v = 0\nfor a in ['p', 'q']:\n  for e in l:\n    if e == 'x':\n      break\n  v += 1" + sink("v")},
		{"a range's variable formatted beside data", "out = []\nfor i in range(3):\n  y = u.upper()\n  out.append('item-%d' % (i + 1))" + sink("out[2]")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := f.run(t, prefix+c.src, nil, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestProvRecursionRefused: Starlark refuses recursion, and the labelled
// program (whose helpers call back into the script's functions) refuses
// it as the plain one does, directly, mutually, through a value and
// through a lambda; so no unbounded Go stack is reachable either way.
func TestProvRecursionRefused(t *testing.T) {
	f := newProvFixture(t, constructData)
	prefix := strings.ReplaceAll(constructPrefix, "SRC", "src")
	cases := []struct{ name, src string }{
		{"direct", "def f(k):\n  return f(k - 1) if k else u\nresult = f(n)"},
		{"mutual", "def f(k):\n  return g(k)\ndef g(k):\n  return f(k - 1) if k else u\nresult = f(n)"},
		{"through a list", "fs = []\ndef f(k):\n  return fs[0](k - 1) if k else u\nfs.append(f)\nresult = f(n)"},
		{"through a lambda", "def f(k):\n  h = lambda j: f(j)\n  return h(k - 1) if k else u\nresult = f(n)"},
		{"through sorted's key", "def f(k):\n  return sorted([1, 2], key=lambda x: f(k - 1) if k else x)\nresult = f(n)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range []*Provenance{provOff, nil} {
				_, err := f.run(t, prefix+c.src, p, nil)
				if fault.CodeOf(err) != fault.InvalidInput || !strings.Contains(err.Error(), "recursi") {
					t.Fatalf("labels %v: %v, want the interpreter's refusal of recursion", p != provOff, err)
				}
			}
		})
	}
}
