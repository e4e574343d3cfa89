package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/gateway"
	"github.com/capkit/capkit/kernel/catalog"
)

const upstreamConfig = `
[[root]]
path = "rw"

[actor.assistant]
effects = ["read_file", "tool_search", "upstream:up"]

[upstream.up]
command = ["/nonexistent/server"]
contain = false

[tool."up__echo"]
max_calls = 7

[tool."up__not_approved"]
max_calls = 1
`

func writeLock(t *testing.T, dir string, names ...string) {
	t.Helper()
	l := &gateway.Lock{}
	for _, n := range names {
		l.Set("up", &gateway.Definition{Name: n, Description: "The " + n + " tool.", InputSchema: []byte(`{"type":"object"}`),
			Annotations: gateway.Annotations{ReadOnly: true}})
	}
	if err := l.Save(context.Background(), filepath.Join(dir, "capkit-lock.json")); err != nil {
		t.Fatal(err)
	}
}

// TestUpstreamTools: the lock's approved tools are registered as
// NAME__TOOL with their [tool] policy, deferred, granted by upstream:NAME,
// with their approved hints; a [tool] table for a tool not approved yet
// is no error; an upstream that cannot start fails a call with
// unavailable, and is in no listing.
func TestUpstreamTools(t *testing.T) {
	dir := fixture(t)
	writeLock(t, dir, "echo")
	h, s := startSession(t, load(t, dir, upstreamConfig), "assistant")
	p, ok := h.Runtime.Policy("up__echo")
	if !ok || p.MaxCalls != 7 {
		t.Fatalf("policy %+v %v", p, ok)
	}
	e, _, _ := h.Runtime.Catalog().Lookup("up__echo")
	if e.Hot || e.Effect != capability.Upstream("up") || !e.Hints().ReadOnly || e.Origin != "upstream up" {
		t.Errorf("entry %+v", e)
	}
	_, err := s.Call(context.Background(), "up__echo", json.RawMessage(`{}`))
	if fault.CodeOf(err) != fault.Unavailable || !strings.Contains(err.Error(), "cannot be started") {
		t.Errorf("call: %v", err)
	}
	for _, sp := range s.Specs() {
		if strings.HasPrefix(sp.Name, "up__") {
			t.Errorf("%s listed although its upstream cannot start", sp.Name)
		}
	}
	if strings.Contains(h.Instructions(s), "The echo tool") {
		t.Error("an upstream's description is in capkit's instructions")
	}
}

// TestUpstreamLockFailsClosed: a lock that cannot be used fails the
// start; a missing one approves nothing, which is no error either for the
// upstream's effect.
func TestUpstreamLockFailsClosed(t *testing.T) {
	dir := fixture(t)
	if _, err := New(load(t, dir, upstreamConfig), nil); err != nil {
		t.Fatalf("without a lock: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "capkit-lock.json"), []byte(`{"format": 1, "upstreams": {"up": {"echo": {"sha256": "00", "definition": {"name": "echo", "inputSchema": {"type": "object"}, "annotations": {}}}}}}`), 0o600)
	_, err := New(load(t, dir, upstreamConfig), nil)
	if fault.CodeOf(err) != fault.Integrity {
		t.Fatalf("a lock with a wrong digest: %v", err)
	}
}

// TestToolIndex ranks a catalog of many tools by BM25 over names and
// descriptions: the tool whose words match best first, stems matching
// ("entity" finds "entities"), what keep refuses left out, at most limit.
func TestToolIndex(t *testing.T) {
	var entries []catalog.Entry
	for i := range 200 {
		entries = append(entries, catalog.Entry{Name: fmt.Sprintf("up__tool_%03d", i), Origin: "upstream up", Effect: capability.Upstream("up"),
			Description: fmt.Sprintf("Does thing number %d.", i), InputSchema: objectSchema()})
	}
	entries = append(entries,
		catalog.Entry{Name: "mem__create_entities", Origin: "upstream mem", Effect: capability.Upstream("mem"), Description: "Create entities in the knowledge graph.", InputSchema: objectSchema()},
		catalog.Entry{Name: "mem__delete_entities", Origin: "upstream mem", Effect: capability.Upstream("mem"), Description: "Delete entities from the knowledge graph.", InputSchema: objectSchema()},
		catalog.Entry{Name: "mem__read_graph", Origin: "upstream mem", Effect: capability.Upstream("mem"), Description: "Read the whole knowledge graph.", InputSchema: objectSchema()})
	cat, err := catalog.New(entries)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := newToolIndex(cat.Entries())
	if err != nil {
		t.Fatal(err)
	}
	all := func(*catalog.Entry) bool { return true }
	rank := func(q string, limit int, keep func(*catalog.Entry) bool) string {
		got, err := ix.Rank(context.Background(), q, limit, keep)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range got {
			names = append(names, e.Name)
		}
		return strings.Join(names, ",")
	}
	if got := rank("create entity", 12, all); !strings.HasPrefix(got, "mem__create_entities,mem__delete_entities") {
		t.Errorf("create entity: %s", got)
	}
	if got := rank("graph", 2, all); strings.Count(got, ",") != 1 {
		t.Errorf("limit 2: %s", got)
	}
	noCreate := func(e *catalog.Entry) bool { return e.Name != "mem__create_entities" }
	if got := rank("create entity", 12, noCreate); strings.Contains(got, "create") {
		t.Errorf("keep ignored: %s", got)
	}
	if got := rank("", 3, all); got != "mem__create_entities,mem__delete_entities,mem__read_graph" {
		t.Errorf("empty query: %s", got)
	}
	if got := rank("zzz", 12, all); got != "" {
		t.Errorf("no match: %s", got)
	}
}

func objectSchema() *jsonschema.Schema { return &jsonschema.Schema{Type: "object"} }
