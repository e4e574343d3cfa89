package script

import (
	"context"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
)

// Laundering attempts a hostile model might write, and each policy
// form: every case names what it tries and whether the sink refuses it.
func TestProvLaundering(t *testing.T) {
	f := newProvFixture(t, map[string]any{"u": "evil.txt", "l": []any{"x", "y"}, "d": map[string]any{"to": "evil.example", "k": []any{"z"}}})
	src := `u = tool.call("src", {"key": "u"})["v"]` + "\n"
	cases := []struct {
		name, src string
		denied    bool
	}{
		{"closure over untrusted", src + "def f():\n  return u\n" + `tool.call("sink", {"a": f()})`, true},
		{"nested function", src + "def f():\n  def g():\n    return u[:3]\n  return g()\n" + `tool.call("sink", {"a": f()})`, true},
		{"lambda", src + "g = lambda: u + ''\n" + `tool.call("sink", {"a": g()})`, true},
		{"default parameter", src + "def f(x=u):\n  return x\n" + `tool.call("sink", {"a": f()})`, true},
		{"function value chosen by data", src + "def a():\n  return 'a'\ndef b():\n  return 'b'\nfn = a if u == 'evil.txt' else b\n" + `tool.call("sink", {"a": fn()})`, true},
		{"character by character", src + "out = ''\nfor c in 'abcdefghijklmnopqrstuvwxyz.'.elems():\n  if c in u:\n    out += c\n" + `tool.call("sink", {"a": out})`, true},
		{"length by counting", src + "n = 0\nfor i in range(100):\n  if i < len(u):\n    n += 1\n" + `tool.call("sink", {"a": n})`, true},
		{"break on data", src + "n = 0\nfor i in range(100):\n  if i == len(u):\n    break\n  n += 1\n" + `tool.call("sink", {"a": n})`, true},
		{"while on data", src + "n = 0\nwhile n < len(u):\n  n += 1\n" + `tool.call("sink", {"a": n})`, true},
		{"mutation through an alias", src + "box = {'v': []}\nalias = box['v']\nif u == 'evil.txt':\n  alias.append(1)\n" + `tool.call("sink", {"a": len(box['v'])})`, true},
		{"list result element", `l = tool.call("src", {"key": "l"})["v"]` + "\n" + `tool.call("sink", {"a": l[0]})`, true},
		{"dict result nested", `d = tool.call("src", {"key": "d"})["v"]` + "\n" + `tool.call("sink", {"a": d["k"][0]})`, true},
		{"keys of a result", `d = tool.call("src", {"key": "d"})["v"]` + "\n" + `tool.call("sink", {"a": sorted(d.keys())[0]})`, true},
		{"json round trip", src + `tool.call("sink", {"a": json.decode(json.encode(u))})`, true},
		{"tool name from data", src + `tool.call("sink" if u else "peek", {"a": "x"})`, true},
		{"label read only", src + `tool.call("sink", {"a": "t" if prov.trusted(u) else "f"})`, true},
		{"trusted work beside", src + "x = 'out.txt'\ny = u.upper()\n" + `tool.call("sink", {"a": x, "b": y})`, false},
		{"read-only tool takes anything", src + `tool.call("peek", {"a": u})`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.run(t, c.src, nil, nil)
			if c.denied != (fault.CodeOf(err) == fault.Denied) {
				t.Fatalf("denied %v, want %v: %v", fault.CodeOf(err) == fault.Denied, c.denied, err)
			}
			if !c.denied && err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestProvPolicyForms(t *testing.T) {
	f := newProvFixture(t, map[string]any{"u": "evil.txt", "d": map[string]any{"to": "https://evil.example/x"}})
	src := `u = tool.call("src", {"key": "u"})["v"]` + "\n"
	run := func(p *Provenance, s string) error {
		_, err := f.run(t, s, p, nil)
		return err
	}
	// loud (net_fetch's effect) is refused an untrusted argument by default.
	if err := run(&Provenance{}, src+`tool.call("loud", {"a": u})`); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("default policy: %v", err)
	}
	// ReadOnly: the host says loud changes nothing.
	if err := run(&Provenance{ReadOnly: []string{"loud"}}, src+`tool.call("loud", {"a": u})`); err != nil {
		t.Fatalf("read-only tool: %v", err)
	}
	// A trusted source.
	if err := run(&Provenance{Trusted: []string{"tool:src"}}, src+`tool.call("sink", {"a": u})`); err != nil {
		t.Fatalf("trusted source: %v", err)
	}
	// Readers: src's data may go to ok.example only.
	readers := &Provenance{
		Readers: map[string][]string{"tool:src": {"ok.example"}},
		Tools:   map[string]map[string]Rule{"loud": {"a": {Any: true, Readers: "c"}}},
	}
	if err := run(readers, src+`tool.call("loud", {"a": u, "c": "https://ok.example/in"})`); err != nil {
		t.Fatalf("readers include the destination: %v", err)
	}
	err := run(readers, src+`tool.call("loud", {"a": u, "c": "https://evil.example/in"})`)
	if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), "may not go to") {
		t.Fatalf("readers exclude the destination: %v", err)
	}
	// Declassification: only through the host's hook.
	declassified := src + `v = prov.declassify(u, "the user approved the file name")` + "\n" + `tool.call("sink", {"a": v})`
	if err := run(&Provenance{}, declassified); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("no hook: %v", err)
	}
	var asked []Declassification
	hook := func(_ context.Context, d Declassification) (bool, error) {
		asked = append(asked, d)
		return string(d.Value) == `"evil.txt"`, nil
	}
	if err := run(&Provenance{Declassify: hook}, declassified); err != nil {
		t.Fatalf("hook allows: %v", err)
	}
	if len(asked) != 1 || asked[0].Reason != "the user approved the file name" || len(asked[0].Sources) != 1 {
		t.Fatalf("the hook was asked %+v", asked)
	}
	if err := run(&Provenance{Declassify: hook}, src+`v = prov.declassify(u + "x", "r")`+"\n"+`tool.call("sink", {"a": v})`); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("hook refuses: %v", err)
	}
	if err := run(&Provenance{Declassify: hook}, src+`v = prov.declassify(u, u)`); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("a reason from data: %v", err)
	}
}
