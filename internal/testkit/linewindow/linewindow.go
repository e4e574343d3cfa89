// Package linewindow checks a tool's line windows (kernel/toolkit's Span)
// at their edges, for the tests of the tools that cut them.
package linewindow

import (
	"fmt"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/kernel/toolkit"
)

// Edges checks a tool's line windows: at the bound the whole text,
// one byte less a window of whole lines naming the next offset; at every
// smaller bound the whole text, a window that moves on or limit naming
// the setting, and no failure above a success; small
// windows followed to the end give the text back exactly; a bound no line
// fits fails with limit and says how to raise it; an offset past the end
// is invalid_input.
func Edges(t *testing.T, tool string, result func(*kernel.Call, int) (kernel.Texter, toolkit.Span, error)) {
	t.Helper()
	call := func(max int64) *kernel.Call {
		return &kernel.Call{Tool: &catalog.Entry{Name: tool}, MaxOutputBytes: max}
	}
	get := func(max int64, offset int) (string, toolkit.Span, int64, error) {
		r, span, err := result(call(max), offset)
		if err != nil {
			return "", span, 0, err
		}
		res, err := kernel.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		return res.Text, span, res.Size(), nil
	}
	full, span, size, err := get(1<<30, 0)
	if err != nil || span.NextOffset != 0 || span.TotalLines < 10 {
		t.Fatalf("whole: %+v %v", span, err)
	}
	if text, span, got, err := get(size, 0); err != nil || text != full || span.NextOffset != 0 || got != size {
		t.Fatalf("at the bound: %+v %v", span, err)
	}
	text, span, got, err := get(size-1, 0)
	shown := strings.Join(strings.SplitAfter(text, "\n")[:span.Lines], "")
	if err != nil || span.NextOffset != span.Lines || span.Lines == 0 || got > size-1 || !strings.HasPrefix(full, shown) ||
		!strings.Contains(text, fmt.Sprintf("%s with offset=%d", tool, span.NextOffset)) {
		t.Fatalf("one past the bound: %+v, %d bytes, %v", span, got, err)
	}
	// At every bound down to a few bytes: the whole text, a window of
	// lines that moves on, or limit naming the setting; never a failure
	// above a bound that succeeds.
	failed := int64(0)
	for max := size; max >= 16; max = max * 7 / 8 {
		text, span, got, err := get(max, 0)
		switch {
		case err != nil:
			if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "[tool."+tool+"] max_output_bytes") {
				t.Fatalf("at %d bytes: %v", max, err)
			}
			failed = max
		case failed != 0:
			t.Fatalf("fails at %d bytes and succeeds at %d", failed, max)
		case got > max || span.NextOffset == 0 && text != full || span.NextOffset != 0 && (span.Lines == 0 || span.NextOffset != span.Lines):
			t.Fatalf("at %d bytes: %+v, %d bytes", max, span, got)
		}
	}
	const small = 1500
	var all strings.Builder
	for off := 0; ; {
		text, span, got, err := get(small, off)
		if err != nil || got > small || span.Offset != off {
			t.Fatalf("window at %d: %+v, %d bytes, %v", off, span, got, err)
		}
		all.WriteString(strings.Join(strings.SplitAfter(text, "\n")[:span.Lines], ""))
		if span.NextOffset == 0 {
			break
		}
		off = span.NextOffset
	}
	if all.String() != full {
		t.Fatalf("windows reassemble %d bytes, want %d", all.Len(), len(full))
	}
	// The longest line, at a bound of its own length (the result around it
	// needs more), does not fit.
	longest := 0
	lines := strings.SplitAfter(full, "\n")
	for i, l := range lines {
		if len(l) > len(lines[longest]) {
			longest = i
		}
	}
	_, _, _, err = get(int64(len(lines[longest])), longest)
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), fmt.Sprintf("line %d of", longest+1)) || !strings.Contains(err.Error(), "[tool."+tool+"] max_output_bytes") {
		t.Fatalf("a line over the bound: %v", err)
	}
	if _, _, _, err := get(size, span.TotalLines); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("an offset past the end: %v", err)
	}
}
