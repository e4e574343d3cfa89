package script

import "testing"

// Scripts the random generator found (or that are kin to them), checked
// both ways: with every source trusted the labelled run does what the
// plain one does, and under the fixture's policy no admitted effect
// differs between the two data sets.
func TestProvSameness(t *testing.T) {
	cases := []struct{ name, src string }{
		// l += l in place: the list's elements are read before any is added.
		{"list += itself", "l = [\"a\"]\nl += l\nl += l\nresult = l"},
		// += on a list being iterated over fails even when nothing is added.
		{"+= empty during iteration", "l = [\"a\"]\nfor x in l:\n  l += []\nresult = l"},
		{"+= during iteration", "l = [\"a\"]\nfor x in l:\n  l += [\"b\"]\nresult = l"},
		// A change made under untrusted control by a function, observed by
		// a later branch that changes something else, which a sink shows.
		{"implicit flow through globals", `us = tool.call("src", {"key": "us"})["v"]
gl, gm, gn, gp = [], [], {"k": []}, {"k": []}
def h0(s):
  gl.append(s)
def h1(s):
  gm.append(s)
if us == "a":
  h0("c")
if len(gl) == 0:
  h1("c")
tool.call("sink", {"a": len(gm)})
if us == "a":
  gn["k"].append("c")
if len(gn["k"]) == 0:
  gp["k"].append("c")
tool.call("sink", {"a": len(gp["k"])})
`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkScript(t, c.src, map[string]any{"us": "a"}, map[string]any{"us": "b"})
		})
	}
}
