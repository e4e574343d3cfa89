package testkit

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// RuntimeBound is Runtime with every tool's output bound set to max, so
// that a test can put a result at its tool's bound and one past it.
func RuntimeBound[O any](t testing.TB, register func(*kernel.Builder, O) error, opts O, max int64) *kernel.Runtime {
	t.Helper()
	return build(t, &kernel.Options{PolicyOverride: func(p kernel.Policy) kernel.Policy {
		p.MaxOutputBytes = max
		return p
	}}, register, opts)
}

// WindowCalls is the most calls Windows makes before failing the test.
const WindowCalls = 10_000

// Windows calls tool with args, then again with offsetArg set to each
// result's next offset (the field next of its structured content: a
// number, or a string such as a ref to list after) until a result has
// none (absent, 0 or ""), and returns every result in order. A call that
// fails, or a next offset that does not move on, fails the test.
func Windows(t testing.TB, s *kernel.Session, tool string, args map[string]any, offsetArg, next string) []*kernel.Result {
	t.Helper()
	out, err := follow(t, s, tool, args, offsetArg, next)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return out
}

// follow is Windows returning the failure of a call, with the results
// before it.
func follow(t testing.TB, s *kernel.Session, tool string, args map[string]any, offsetArg, next string) ([]*kernel.Result, error) {
	t.Helper()
	var out []*kernel.Result
	a := maps.Clone(args)
	last := cursorArg(t, a[offsetArg])
	for range WindowCalls {
		res, err := Call(t, s, tool, a)
		if err != nil {
			return out, fmt.Errorf("%v: %w", a, err)
		}
		out = append(out, res)
		n := nextCursor(t, res, tool, next)
		if n.none() {
			return out, nil
		}
		if !n.past(last) {
			t.Fatalf("%s: %s %v after %v", tool, next, n, last)
		}
		last, a[offsetArg] = n, n.arg()
	}
	t.Fatalf("%s: still windows after %d calls", tool, WindowCalls)
	return nil, nil
}

// WindowBounds checks a windowing tool at small output bounds, where a
// window holds few units or none. session(max) is a session whose tool
// has the output bound max. Called with args, at bounds from the whole
// result's size down to a few bytes (and finely where the tool starts to
// fail), the tool either fails with limit naming [tool.NAME]
// max_output_bytes (a bound no unit fits), or returns a result within
// the bound that is the whole result when it names no next window, or
// else a window whose next (the structured field) lies past the offset it
// started at (offsetArg of args). No bound fails above one that succeeds,
// and some bound gives a window. The smallest bound that succeeds is
// followed to the end (or, where a later unit is larger than the first,
// the smallest bound a little larger at which they all fit), which it
// returns.
func WindowBounds(t testing.TB, session func(max int64) *kernel.Session, tool string, args map[string]any, offsetArg, next string) int64 {
	t.Helper()
	whole, err := Call(t, session(limits.HardMaxOutputBytes), tool, args)
	if err != nil {
		t.Fatalf("%s at the hard bound: %v", tool, err)
	}
	if n := nextCursor(t, whole, tool, next); !n.none() {
		t.Fatalf("%s at the hard bound is a window (%s %v): give smaller arguments", tool, next, n)
	}
	start := cursorArg(t, args[offsetArg])
	windowed := false
	// fits calls the tool at max and checks the result; false is a limit
	// failure naming the setting.
	fits := func(max int64) bool {
		t.Helper()
		res, err := Call(t, session(max), tool, args)
		if err != nil {
			if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "[tool."+tool+"] max_output_bytes") {
				t.Fatalf("%s at a bound of %d bytes: %v (want a window, or limit naming [tool.%s] max_output_bytes)", tool, max, err, tool)
			}
			return false
		}
		n := nextCursor(t, res, tool, next)
		switch {
		case res.Size() > max:
			t.Fatalf("%s at a bound of %d bytes: %d bytes", tool, max, res.Size())
		case n.none() && (res.Text != whole.Text || string(res.Structured) != string(whole.Structured)):
			t.Fatalf("%s at a bound of %d bytes names no next window but is not the whole result:\n%s\n%s", tool, max, res.Text, res.Structured)
		case !n.none() && !n.past(start):
			t.Fatalf("%s at a bound of %d bytes: %s %v does not move past %v:\n%s", tool, max, next, n, start, res.Text)
		}
		windowed = windowed || !n.none()
		return true
	}
	var smallest, failed int64
	for _, max := range shrinking(whole.Size()) {
		if !fits(max) {
			failed = max
			break
		}
		smallest = max
	}
	if smallest == 0 {
		t.Fatalf("%s fails at every bound up to the whole result's %d bytes", tool, whole.Size())
	}
	// Between the largest failure and the smallest success, finely (at
	// most 32 steps); then below the failure, coarsely: none may succeed.
	step := max((smallest-failed)/32, 1)
	for max := smallest - step; failed > 0 && max > failed; max -= step {
		if fits(max) {
			smallest = max
		} else if max < smallest {
			failed = max
		}
	}
	for _, max := range shrinking(failed) {
		if failed > 0 && max < failed && fits(max) {
			t.Fatalf("%s fails at a bound of %d bytes and succeeds at %d", tool, failed, max)
		}
	}
	if !windowed {
		t.Fatalf("%s gave no window at any bound: give it more units", tool)
	}
	for max := smallest; ; max += max/4 + 1 {
		_, err := follow(t, session(max), tool, args, offsetArg, next)
		switch {
		case err == nil:
			return max
		case fault.CodeOf(err) != fault.Limit || max > whole.Size():
			t.Fatalf("%s: windows at a bound of %d bytes: %v", tool, max, err)
		}
	}
}

// shrinking is the bounds WindowBounds tries, largest first: size and
// one byte less, then ever smaller steps down to 16 bytes.
func shrinking(size int64) []int64 {
	out := []int64{size}
	for b := size - 1; b >= 16; b = b * 7 / 8 {
		out = append(out, b)
	}
	return out
}

// cursor is where a window starts: an offset, or a string (a key to
// list after).
type cursor struct {
	num   int64
	str   string
	isStr bool
}

func (c cursor) none() bool { return c.num == 0 && c.str == "" }

// past reports whether c lies after prev.
func (c cursor) past(prev cursor) bool {
	if c.isStr {
		return c.str > prev.str
	}
	return c.num > prev.num
}

func (c cursor) arg() any {
	if c.isStr {
		return c.str
	}
	return c.num
}

func (c cursor) String() string { return fmt.Sprint(c.arg()) }

func nextCursor(t testing.TB, res *kernel.Result, tool, next string) cursor {
	t.Helper()
	var st map[string]json.RawMessage
	if err := json.Unmarshal(res.Structured, &st); err != nil {
		t.Fatalf("%s: structured content %s: %v", tool, res.Structured, err)
	}
	raw, ok := st[next]
	if !ok {
		return cursor{}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %s %s: %v", tool, next, raw, err)
	}
	return cursorArg(t, v)
}

// cursorArg is the cursor an argument or a decoded field holds.
func cursorArg(t testing.TB, v any) cursor {
	t.Helper()
	switch n := v.(type) {
	case nil:
		return cursor{}
	case int:
		return cursor{num: int64(n)}
	case int64:
		return cursor{num: n}
	case float64:
		return cursor{num: int64(n)}
	case string:
		return cursor{str: n, isStr: true}
	}
	t.Fatalf("a window's cursor %v (%T): give an int or a string", v, v)
	return cursor{}
}
