package journal

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// readRecords decodes a journal_read result.
func readRecords(t *testing.T, res *kernel.Result) ReadResult {
	t.Helper()
	var r ReadResult
	if err := json.Unmarshal(res.Structured, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestJournalReadWindows(t *testing.T) {
	root := pdir(t)
	j := open(t, root, nil)
	for i := range 40 {
		ev, _ := json.Marshal(map[string]string{"n": strings.Repeat("é", 10*i)})
		if _, err := j.Append(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	bj, err := Open(root, "big", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bj.Close()
	big, _ := json.Marshal(strings.Repeat("x", limits.JournalMaxEventBytes-2))
	if _, err := bj.Append(context.Background(), big); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"name": "events", "from": 1, "limit": 40}
	session := func(max int64) *kernel.Session {
		rt := testkit.RuntimeBound(t, RegisterTools, nil, max)
		return testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.JournalRead))
	}
	all, err := testkit.Call(t, session(limits.HardMaxOutputBytes), "journal_read", args)
	if err != nil {
		t.Fatal(err)
	}
	whole := readRecords(t, all)
	// At the bound every record comes back; one byte less gives a window
	// of whole records and the record to go on from.
	res, err := testkit.Call(t, session(all.Size()), "journal_read", args)
	if err != nil || readRecords(t, res).NextFrom != 0 || res.Size() != all.Size() {
		t.Fatalf("at the bound: %v %v", res, err)
	}
	res, err = testkit.Call(t, session(all.Size()-1), "journal_read", args)
	if err != nil {
		t.Fatal(err)
	}
	part := readRecords(t, res)
	if n := len(part.Records); n != 39 || part.NextFrom != 40 || !strings.Contains(res.Text, "journal_read with from=40") {
		t.Fatalf("one past the bound: %d records, next_from %d, text %q", n, part.NextFrom, res.Text[len(res.Text)-80:])
	}
	// Small windows, followed, give back every record in order.
	var got []Record
	for _, res := range testkit.Windows(t, session(4096), "journal_read", args, "from", "next_from") {
		if res.Size() > 4096 {
			t.Fatalf("a window of %d bytes", res.Size())
		}
		got = append(got, readRecords(t, res).Records...)
	}
	eq := func(a, b Record) bool {
		return a.Seq == b.Seq && a.Hash == b.Hash && string(a.Event) == string(b.Event)
	}
	if !slices.EqualFunc(got, whole.Records, eq) {
		t.Fatalf("windows gave %d records, want %d", len(got), len(whole.Records))
	}
	// A record of the largest event fits the default bound; under a bound
	// it does not fit, it fails with limit and says how to raise it.
	if _, err := testkit.Call(t, testkit.ToolSession(t, RegisterTools, nil, []string{root}, capability.JournalRead), "journal_read", map[string]any{"name": "big"}); err != nil {
		t.Fatalf("the largest record under the default bound: %v", err)
	}
	_, err = testkit.Call(t, session(limits.JournalMaxEventBytes), "journal_read", map[string]any{"name": "big"})
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "[tool.journal_read] max_output_bytes") {
		t.Fatalf("a record over the bound: %v", err)
	}
}

// TestReadUpTo: a byte bound stops the read after the record whose event
// crosses it, so a window never holds more than it can show.
func TestReadUpTo(t *testing.T) {
	j := open(t, pdir(t), nil)
	for range 10 {
		if _, err := j.Append(context.Background(), []byte(`"0123456789"`)); err != nil { // 12 bytes
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		max  int64
		want int
	}{{0, 10}, {12, 2}, {23, 2}, {24, 3}, {1 << 20, 10}} {
		recs, _, err := j.ReadUpTo(context.Background(), 1, 10, c.max)
		if err != nil || len(recs) != c.want {
			t.Errorf("bound %d: %d records, want %d (%v)", c.max, len(recs), c.want, err)
		}
	}
}

// TestJournalReadWindowBounds: journal_read at small output bounds
// (testkit.WindowBounds).
func TestJournalReadWindowBounds(t *testing.T) {
	root := pdir(t)
	j := open(t, root, nil)
	for i := range 30 {
		ev, _ := json.Marshal(map[string]string{"n": strings.Repeat("é", i%7)})
		if _, err := j.Append(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	session := func(max int64) *kernel.Session {
		rt := testkit.RuntimeBound(t, RegisterTools, nil, max)
		return testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.JournalRead))
	}
	testkit.WindowBounds(t, session, "journal_read", map[string]any{"name": "events", "from": 1}, "from", "next_from")
}
