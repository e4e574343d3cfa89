package script

import (
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
)

// TestProvReadersDestinationUnreadable: a readers rule can only be held
// to a destination it can read; when the argument naming where data goes
// is missing, or is not a string or a list of strings, data whose readers
// are restricted is refused (the tool's own reading of such a value is
// unknown here), while unrestricted data still goes.
func TestProvReadersDestinationUnreadable(t *testing.T) {
	f := newProvFixture(t, map[string]any{"u": "secret"})
	p := &Provenance{
		Readers: map[string][]string{"tool:src": {"ok.example"}},
		Tools:   map[string]map[string]Rule{"loud": {"a": {Any: true, Readers: "c"}}},
	}
	restricted := `u = tool.call("src", {"key": "u"})["v"]` + "\n"
	free := `u = tool.call("clean", {"key": "u"})["v"]` + "\n"
	for _, c := range []struct{ name, dest string }{
		{"missing", ``},
		{"a number", `, "c": 7`},
		{"an object", `, "c": {"host": "https://evil.example/"}`},
		{"a list holding an object", `, "c": ["https://ok.example/", {"host": "https://evil.example/"}]`},
		{"a list holding a number", `, "c": ["https://ok.example/", 7]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			call := `tool.call("loud", {"a": u` + c.dest + `})`
			_, err := f.run(t, restricted+call, p, nil)
			if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), `"c"`) {
				t.Fatalf("restricted data, destination %s: %v, want denied naming c", c.name, err)
			}
			if _, err := f.run(t, free+call, p, nil); err != nil {
				t.Fatalf("unrestricted data, destination %s: %v", c.name, err)
			}
		})
	}
	// Readable destinations are still held to the readers.
	if _, err := f.run(t, restricted+`tool.call("loud", {"a": u, "c": ["https://ok.example/a", "ok.example"]})`, p, nil); err != nil {
		t.Fatalf("a list of allowed destinations: %v", err)
	}
	if _, err := f.run(t, restricted+`tool.call("loud", {"a": u, "c": ["https://ok.example/a", "https://evil.example/"]})`, p, nil); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("a list with one destination not allowed: %v", err)
	}
}
