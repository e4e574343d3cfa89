package zipfile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

func TestZipListWindows(t *testing.T) {
	work := t.TempDir()
	os.Mkdir(filepath.Join(work, "src"), 0o700)
	var names []string
	for i := range 200 {
		name := fmt.Sprintf("file-%03d-%s.txt", i, strings.Repeat("n", i%40))
		names = append(names, name)
		os.WriteFile(filepath.Join(work, "src", name), []byte(name), 0o600)
	}
	session := func(max int64) *kernel.Session {
		rt := testkit.RuntimeBound(t, RegisterTools, nil, max)
		return testkit.Session(t, rt, testkit.Grant(t, []string{work}, capability.ArchiveWrite, capability.ArchiveRead))
	}
	big := session(limits.HardMaxOutputBytes)
	if _, err := testkit.Call(t, big, "zip_create", map[string]any{"archive": "a.zip", "dir": "src", "files": names}); err != nil {
		t.Fatal(err)
	}
	entries := func(res *kernel.Result) ListResult {
		var r ListResult
		if err := json.Unmarshal(res.Structured, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	args := map[string]any{"archive": "a.zip"}
	all, err := testkit.Call(t, big, "zip_list", args)
	if err != nil {
		t.Fatal(err)
	}
	whole := entries(all)
	// At the bound every member; one byte less a window and the offset of
	// the next.
	if res, err := testkit.Call(t, session(all.Size()), "zip_list", args); err != nil || entries(res).NextOffset != 0 || len(entries(res).Entries) != 200 {
		t.Fatalf("at the bound: %v", err)
	}
	res, err := testkit.Call(t, session(all.Size()-1), "zip_list", args)
	if err != nil {
		t.Fatal(err)
	}
	if r := entries(res); r.NextOffset != len(r.Entries) || len(r.Entries) == 0 || r.Members != 200 || res.Size() > all.Size()-1 ||
		!strings.Contains(res.Text, fmt.Sprintf("zip_list with offset=%d", r.NextOffset)) {
		t.Fatalf("one past the bound: %d entries, next %d", len(r.Entries), r.NextOffset)
	}
	// Small windows, followed, list every member once, in order.
	var got []Entry
	for _, res := range testkit.Windows(t, session(2048), "zip_list", args, "offset", "next_offset") {
		got = append(got, entries(res).Entries...)
	}
	if !slices.Equal(got, whole.Entries) {
		t.Fatalf("windows listed %d members, want %d", len(got), len(whole.Entries))
	}
	// A bound one member does not fit fails with limit and says how to
	// raise it; an offset past the last member is refused.
	if _, err := testkit.Call(t, session(200), "zip_list", args); fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "[tool.zip_list] max_output_bytes") {
		t.Fatalf("a member over the bound: %v", err)
	}
	if _, err := testkit.Call(t, big, "zip_list", map[string]any{"archive": "a.zip", "offset": 200}); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("offset past the end: %v", err)
	}
}

// TestZipCreateReceiptBound: a receipt that could exceed the bound is
// refused before the archive is written.
func TestZipCreateReceiptBound(t *testing.T) {
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("a"), 0o600)
	rt := testkit.RuntimeBound(t, RegisterTools, nil, 300)
	s := testkit.Session(t, rt, testkit.Grant(t, []string{work}, capability.ArchiveWrite))
	_, err := testkit.Call(t, s, "zip_create", map[string]any{"archive": "a.zip", "files": []string{"a.txt", "a.txt"}})
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "[tool.zip_create] max_output_bytes") {
		t.Fatalf("%v", err)
	}
	if _, err := os.Stat(filepath.Join(work, "a.zip")); !os.IsNotExist(err) {
		t.Fatalf("the archive was written: %v", err)
	}
	// The default bound holds the receipt of a thousand long names.
	var names []string
	for i := range 1000 {
		names = append(names, fmt.Sprintf("%0100d", i))
	}
	r := testkit.Runtime(t, RegisterTools, nil)
	p, _ := r.Policy("zip_create")
	if err := createFits(&kernel.Call{Tool: nil, MaxOutputBytes: p.MaxOutputBytes}, CreateArgs{Archive: "a.zip", Files: names}); err != nil {
		t.Fatal(err)
	}
}

// TestZipListWindowBounds: zip_list at small output bounds
// (testkit.WindowBounds).
func TestZipListWindowBounds(t *testing.T) {
	work := t.TempDir()
	os.Mkdir(filepath.Join(work, "src"), 0o700)
	var names []string
	for i := range 30 {
		name := fmt.Sprintf("file-%03d-%s.txt", i, strings.Repeat("n", i%7))
		names = append(names, name)
		os.WriteFile(filepath.Join(work, "src", name), []byte(name), 0o600)
	}
	session := func(max int64) *kernel.Session {
		rt := testkit.RuntimeBound(t, RegisterTools, nil, max)
		return testkit.Session(t, rt, testkit.Grant(t, []string{work}, capability.ArchiveWrite, capability.ArchiveRead))
	}
	if _, err := testkit.Call(t, session(limits.HardMaxOutputBytes), "zip_create", map[string]any{"archive": "a.zip", "dir": "src", "files": names}); err != nil {
		t.Fatal(err)
	}
	testkit.WindowBounds(t, session, "zip_list", map[string]any{"archive": "a.zip"}, "offset", "next_offset")
}
