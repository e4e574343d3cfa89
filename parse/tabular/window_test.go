package tabular

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

// scanRows are the rows of a csv_scan result's text (after the summary
// and the header) and its next_offset.
func scanRows(t *testing.T, res *kernel.Result) ([]string, int64) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(res.Text, "\n"), "\n")
	var st struct {
		NextOffset int64 `json:"next_offset"`
	}
	if err := json.Unmarshal(res.Structured, &st); err != nil {
		t.Fatal(err)
	}
	return lines[2:], st.NextOffset
}

func TestCSVScanWindows(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("id,name\n")
	for i := range 300 {
		fmt.Fprintf(&csv, "%d,%s\n", i, strings.Repeat("ü", i%17))
	}
	csv.WriteString("300," + strings.Repeat("x", 5000) + "\n")
	files := testkit.Files{"t.csv": []byte(csv.String())}
	session := func(max int64) *kernel.Session {
		rt := testkit.RuntimeBound(t, RegisterTools, &ToolOptions{Files: files}, max)
		return testkit.Session(t, rt, testkit.Grant(t, []string{"/srv"}, capability.Parse, capability.ReadFile))
	}
	args := map[string]any{"path": "t.csv", "max_rows": 300}
	all, err := testkit.Call(t, session(limits.HardMaxOutputBytes), "csv_scan", args)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := scanRows(t, all)
	// At the bound every row comes back; one byte less gives a window of
	// whole rows and the offset that continues.
	res, err := testkit.Call(t, session(all.Size()), "csv_scan", args)
	if got, next := scanRows(t, res); err != nil || next != 300 || len(got) != 300 {
		t.Fatalf("at the bound: %d rows, next %d, %v", len(got), next, err)
	}
	res, err = testkit.Call(t, session(all.Size()-1), "csv_scan", args)
	if err != nil {
		t.Fatal(err)
	}
	got, next := scanRows(t, res)
	if int(next) != len(got) || len(got) == 0 || len(got) >= 300 || !slices.Equal(got, want[:len(got)]) || res.Size() > all.Size()-1 ||
		!strings.Contains(res.Text, fmt.Sprintf("pass offset %d to continue", next)) {
		t.Fatalf("one past the bound: %d rows, next %d, %d bytes", len(got), next, res.Size())
	}
	// Windows of a small bound, followed, give back every row; the last
	// row, too large alone, fails with limit and says how to raise it.
	s := session(2048)
	var rows []string
	for off := int64(0); off < 300; {
		res, err := testkit.Call(t, s, "csv_scan", map[string]any{"path": "t.csv", "max_rows": 300 - off, "offset": off})
		if err != nil || res.Size() > 2048 {
			t.Fatalf("window at %d: %v", off, err)
		}
		got, next := scanRows(t, res)
		rows = append(rows, got...)
		off += int64(len(got))
		if next != 0 && next != off {
			t.Fatalf("next_offset %d after %d rows", next, off)
		}
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("windows gave %d rows, want %d", len(rows), len(want))
	}
	_, err = testkit.Call(t, s, "csv_scan", map[string]any{"path": "t.csv", "offset": 300})
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "[tool.csv_scan] max_output_bytes") {
		t.Fatalf("a row over the bound: %v", err)
	}
}

// TestCSVScanWindowBounds: csv_scan at small output bounds
// (testkit.WindowBounds).
func TestCSVScanWindowBounds(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("id,name\n")
	for i := range 60 {
		fmt.Fprintf(&csv, "%d,%s\n", i, strings.Repeat("ü", i%17))
	}
	files := testkit.Files{"t.csv": []byte(csv.String())}
	session := func(max int64) *kernel.Session {
		rt := testkit.RuntimeBound(t, RegisterTools, &ToolOptions{Files: files}, max)
		return testkit.Session(t, rt, testkit.Grant(t, []string{"/srv"}, capability.Parse, capability.ReadFile))
	}
	testkit.WindowBounds(t, session, "csv_scan", map[string]any{"path": "t.csv"}, "offset", "next_offset")
	testkit.WindowBounds(t, session, "csv_scan", map[string]any{"path": "t.csv", "offset": 20, "columns": []string{"name"}}, "offset", "next_offset")
}
