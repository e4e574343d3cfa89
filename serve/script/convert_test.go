package script

import (
	"strings"
	"testing"

	"go.starlark.net/starlark"

	"github.com/capkit/capkit/fault"
)

func TestJSONRoundTrip(t *testing.T) {
	for _, doc := range []string{
		`null`, `true`, `0`, `-12`, `123456789012345678901234567890`, `1.5`, `1e+300`, `"a\u00e9\n\"x"`,
		`[]`, `{}`, `[1,[2,[3]],{"b":1,"a":2}]`, `{"z":null,"a":[true,false]}`,
	} {
		v, err := fromJSON([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		out, err := toJSON(v, 1<<20, "value")
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		v2, err := fromJSON(out)
		if err != nil {
			t.Fatalf("%s -> %s: %v", doc, out, err)
		}
		if eq, err := starlark.Equal(v, v2); err != nil || !eq {
			t.Fatalf("%s -> %s: not equal", doc, out)
		}
	}
}

func TestFromJSONRefuses(t *testing.T) {
	for _, doc := range []string{``, `{`, `[1,]`, `{"a":1,"a":2}`, "\"\xff\"", `1 2`, strings.Repeat("[", 600) + strings.Repeat("]", 600)} {
		if _, err := fromJSON([]byte(doc)); fault.CodeOf(err) != fault.Integrity {
			t.Fatalf("%q: %v", doc, err)
		}
	}
}

func TestToJSONBudget(t *testing.T) {
	s := starlark.String(strings.Repeat("x", 100))
	if out, err := toJSON(s, 102, "v"); err != nil || len(out) != 102 {
		t.Fatalf("at the budget: %d %v", len(out), err)
	}
	if _, err := toJSON(s, 101, "v"); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one past: %v", err)
	}
	if _, err := toJSON(starlark.String("\xff"), 100, "v"); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("invalid UTF-8: %v", err)
	}
	d := starlark.NewDict(1)
	d.SetKey(starlark.MakeInt(1), starlark.None)
	if _, err := toJSON(d, 100, "v"); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("int key: %v", err)
	}
}

// FuzzFromJSON: whatever decodes re-encodes, and the encoding decodes to
// an equal value.
func FuzzFromJSON(f *testing.F) {
	for _, s := range []string{`null`, `{"a":[1,2.5,"x"]}`, `[[[]]]`, `{"a":1,"a":2}`, `123456789012345678901234567890`, `-0`, `1E5`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := fromJSON(data)
		if err != nil {
			return
		}
		out, err := toJSON(v, 1<<24, "value")
		if err != nil {
			t.Fatalf("%q decoded but does not encode: %v", data, err)
		}
		v2, err := fromJSON(out)
		if err != nil {
			t.Fatalf("%q -> %q does not decode: %v", data, out, err)
		}
		if eq, err := starlark.Equal(v, v2); err != nil || !eq {
			t.Fatalf("%q -> %q changed", data, out)
		}
	})
}
