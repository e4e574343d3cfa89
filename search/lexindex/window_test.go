package lexindex

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

func TestSearchAndStatusWindows(t *testing.T) {
	root := t.TempDir()
	session := func(max int64) *kernel.Session {
		rt := testkit.RuntimeBound(t, RegisterTools, nil, max)
		return testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.IndexWrite, capability.IndexRead))
	}
	big := session(limits.HardMaxOutputBytes)
	var muts []map[string]any
	for i := range 120 {
		muts = append(muts, map[string]any{"ref": fmt.Sprintf("doc-%03d-%s", i, strings.Repeat("r", i%30)), "text": "common word " + strings.Repeat("filler ", i)})
	}
	if _, err := testkit.Call(t, big, "lexindex_update", map[string]any{"index": "ix.db", "mutations": muts}); err != nil {
		t.Fatal(err)
	}
	decode := func(res *kernel.Result) SearchResult {
		var r SearchResult
		if err := json.Unmarshal(res.Structured, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	args := map[string]any{"index": "ix.db", "query": "common", "limit": 100, "snippets": true}
	all, err := testkit.Call(t, big, "lexindex_search", args)
	if err != nil || len(decode(all).Hits) != 100 {
		t.Fatalf("%v", err)
	}
	// At the bound the 100 hits; one byte less a window and the offset of
	// the next; windows followed give the same ranking once.
	if res, err := testkit.Call(t, session(all.Size()), "lexindex_search", args); err != nil || decode(res).NextOffset != 0 || len(decode(res).Hits) != 100 {
		t.Fatalf("at the bound: %v", err)
	}
	res, err := testkit.Call(t, session(all.Size()-1), "lexindex_search", args)
	if r := decode(res); err != nil || len(r.Hits) != 99 || r.NextOffset != 99 || !strings.Contains(res.Text, "lexindex_search with offset=99") {
		t.Fatalf("one past the bound: %v", err)
	}
	var hits []Hit
	for _, res := range testkit.Windows(t, session(2048), "lexindex_search", args, "offset", "next_offset") {
		hits = append(hits, decode(res).Hits...)
	}
	// limit counts from offset, so the windows go on to every hit.
	every, err := testkit.Call(t, big, "lexindex_search", map[string]any{"index": "ix.db", "query": "common", "limit": 200, "snippets": true})
	if err != nil || !slices.Equal(hits, decode(every).Hits) || len(hits) != 120 {
		t.Fatalf("windows gave %d hits, want 120: %v", len(hits), err)
	}
	if _, err := testkit.Call(t, session(300), "lexindex_search", args); fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "[tool.lexindex_search] max_output_bytes") {
		t.Fatalf("a hit over the bound: %v", err)
	}

	// A listing cut by the bound continues with after; every ref comes
	// once, in order.
	status := func(s *kernel.Session, a map[string]any) StatusResult {
		res, err := testkit.Call(t, s, "lexindex_status", a)
		if err != nil {
			t.Fatal(err)
		}
		var r StatusResult
		if err := json.Unmarshal(res.Structured, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	want := status(big, map[string]any{"index": "ix.db"}).Refs
	small := session(2048)
	var refs []DocStatus
	for after, calls := "", 0; calls < 100; calls++ {
		r := status(small, map[string]any{"index": "ix.db", "after": after})
		refs = append(refs, r.Refs...)
		if r.Next == "" {
			break
		}
		after = r.Next
	}
	if len(want) != 120 || !slices.Equal(refs, want) {
		t.Fatalf("listing windows gave %d refs, want %d", len(refs), len(want))
	}
	// Refs asked for by name that do not all fit: the result says how many
	// were left out.
	var asked []map[string]any
	for _, d := range want {
		asked = append(asked, map[string]any{"ref": d.Ref})
	}
	r := status(small, map[string]any{"index": "ix.db", "refs": asked})
	if r.Unreported == 0 || len(r.Refs)+r.Unreported != 120 || !slices.Equal(r.Refs, want[:len(r.Refs)]) {
		t.Fatalf("%d refs reported, %d not", len(r.Refs), r.Unreported)
	}
}

// TestWindowBounds: lexindex_search and lexindex_status at small output
// bounds (testkit.WindowBounds).
func TestWindowBounds(t *testing.T) {
	root := t.TempDir()
	session := func(max int64) *kernel.Session {
		rt := testkit.RuntimeBound(t, RegisterTools, nil, max)
		return testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.IndexWrite, capability.IndexRead))
	}
	var muts []map[string]any
	for i := range 30 {
		muts = append(muts, map[string]any{"ref": fmt.Sprintf("doc-%03d-%s", i, strings.Repeat("r", i%7)), "text": "common word " + strings.Repeat("filler ", i%5)})
	}
	if _, err := testkit.Call(t, session(limits.HardMaxOutputBytes), "lexindex_update", map[string]any{"index": "ix.db", "mutations": muts}); err != nil {
		t.Fatal(err)
	}
	testkit.WindowBounds(t, session, "lexindex_search", map[string]any{"index": "ix.db", "query": "common", "limit": 50, "snippets": true}, "offset", "next_offset")
	testkit.WindowBounds(t, session, "lexindex_status", map[string]any{"index": "ix.db"}, "after", "next")
}
