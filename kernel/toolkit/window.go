package toolkit

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
)

// UnitTooLarge is the failure for one unit of a window (a row, a record, a
// line) that alone does not fit the call's output bound: narrow says how
// to ask for less, and the host's way to raise the bound is added.
func UnitTooLarge(call *kernel.Call, what string, size int64, narrow string) error {
	return fault.OutputTooLarge(what, size, call.MaxOutputBytes, narrow+", "+kernel.RaiseHint(call.Tool.Name, "max_output_bytes"))
}

// FitPrefix returns the largest n in 0..total for which build(n), the
// result holding the first n units, encodes within max bytes (text and
// structured content, as the kernel counts them). build must grow with n.
// The size of a few units predicts where the cut falls, so a list far
// larger than max is never encoded whole; a result of all units that
// may fit is encoded once.
func FitPrefix(bound int64, total int, build func(n int) any) (int, error) {
	size := func(n int) (int64, error) {
		res, err := kernel.Encode(build(n))
		if err != nil {
			return 0, err
		}
		defer res.Release()
		return res.Size(), nil
	}
	fits := func(n int) (bool, error) {
		s, err := size(n)
		return s <= bound, err
	}
	k := min(total, sampleUnits)
	sk, err := size(k)
	switch {
	case err != nil:
		return 0, err
	case sk > bound: // the cut falls inside the sample
		return bracket(0, k/2, k, fits)
	case k == total:
		return total, nil
	}
	// unknown is the least n known not to fit: total+1 until total is
	// measured, which it is when the sample predicts it may fit.
	unknown := total + 1
	if sk*int64(total)/int64(k) <= 2*bound {
		ok, err := fits(total)
		if ok || err != nil {
			return total, err
		}
		unknown = total
	}
	guess := min(total, max(k+1, int(int64(k)*bound/sk)))
	return bracket(k, guess, unknown, fits)
}

// sampleUnits is how many units FitPrefix encodes to predict the cut.
const sampleUnits = 16

// bracket finds the largest n in lo..hi-1 with fits(n), given fits(lo)
// (or lo 0) and not fits(hi), searching out from guess in doubling steps
// and then by halves.
func bracket(lo, guess, hi int, fits func(int) (bool, error)) (int, error) {
	for step := 1; guess > lo && guess < hi; step *= 2 {
		ok, err := fits(guess)
		if err != nil {
			return 0, err
		}
		if ok {
			lo, guess = guess, guess+step
		} else {
			hi, guess = guess, guess-step
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := fits(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// LineWindow cuts text, split into lines after each '\n', to the whole
// lines from line offset (0-based) on that fit budget bytes. It returns
// the window, the number of lines it holds, the total number of lines and
// whether lines follow it. A first line longer than budget gives an empty
// window with more set: the caller fails, as one unit does not fit.
func LineWindow(text string, offset int, budget int64) (window string, lines, total int, more bool) {
	total = strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		total++
	}
	start := 0
	for i := 0; i < offset && start < len(text); i++ {
		nl := strings.IndexByte(text[start:], '\n')
		if nl < 0 {
			start = len(text)
			break
		}
		start += nl + 1
	}
	rest := text[start:]
	if int64(len(rest)) <= budget {
		return rest, total - min(offset, total), total, false
	}
	cut := strings.LastIndexByte(rest[:max(budget, 0)], '\n') + 1
	window = rest[:cut]
	return window, strings.Count(window, "\n"), total, true
}

// ByteWindow cuts body to the bytes from offset on that fit budget,
// ending after the window's last '\n' when that keeps at least half of
// budget and otherwise on a UTF-8 character boundary, so that windows read one after another
// reassemble the body exactly. next is the offset of the following window
// (0 when this one reaches the end). A window that cannot hold one
// character is empty, with next set to offset.
func ByteWindow(body string, offset, budget int64) (window string, next int64) {
	rest := body[min(offset, int64(len(body))):]
	if int64(len(rest)) <= budget {
		return rest, 0
	}
	cut := int(max(budget, 0))
	if nl := strings.LastIndexByte(rest[:cut], '\n'); nl >= cut/2 {
		cut = nl + 1
	} else {
		for cut > 0 && !utf8.RuneStart(rest[cut]) {
			cut--
		}
	}
	return rest[:cut], offset + int64(cut)
}

// Span is a window of whole lines of a tool's text, as its result reports
// it: lines [Offset, Offset+Lines) of TotalLines, 0-based; NextOffset is
// the offset argument of the next window (0: this one reaches the end).
type Span struct {
	Offset     int `json:"offset,omitzero"`
	Lines      int `json:"lines_shown"`
	TotalLines int `json:"total_lines"`
	NextOffset int `json:"next_offset,omitzero"`
}

// footer is the line a window's text ends with when more follows.
func (s Span) footer(tool string) string {
	return fmt.Sprintf("\n[lines %d..%d of %d shown: the next window is %s with offset=%d]\n", s.Offset+1, s.Offset+s.Lines, s.TotalLines, tool, s.NextOffset)
}

// Lines returns the window of text, from line offset (0-based) on, that
// fits the call's output bound in the result build makes of it and its
// span: all of it when it fits, else whole lines and a footer saying how
// to go on. what names the text in messages ("the page's text"). An
// offset past the last line is invalid_input; a first line too large
// alone fails with limit.
func Lines(call *kernel.Call, text string, offset int, what string, build func(Span, string) any) (Span, string, error) {
	_, _, total, _ := LineWindow(text, 0, int64(len(text)))
	if offset < 0 || (offset > 0 && offset >= total) {
		return Span{}, "", fault.New(fault.InvalidInput, "offset %d is past the end of %s, which has %d lines", offset, what, total)
	}
	rest, n, _, _ := LineWindow(text, offset, int64(len(text)))
	s := Span{Offset: offset, Lines: n, TotalLines: total}
	fits, err := encodedWithin(call.MaxOutputBytes, build(s, rest))
	if fits || err != nil {
		return s, rest, err
	}
	frame := Span{Offset: offset, Lines: total, TotalLines: total, NextOffset: total}
	f, err := kernel.Encode(build(frame, frame.footer(call.Tool.Name)))
	if err != nil {
		return Span{}, "", err
	}
	win, n, _, _ := LineWindow(text, offset, call.MaxOutputBytes-f.Size())
	if n == 0 {
		return Span{}, "", UnitTooLarge(call, fmt.Sprintf("line %d of %s", offset+1, what), 0, "a line is never shown in part")
	}
	s = Span{Offset: offset, Lines: n, TotalLines: total, NextOffset: offset + n}
	return s, win + s.footer(call.Tool.Name), nil
}

// encodedWithin reports whether v's result is at most max bytes.
func encodedWithin(max int64, v any) (bool, error) {
	res, err := kernel.Encode(v)
	if err != nil {
		return false, err
	}
	defer res.Release()
	return res.Size() <= max, nil
}

// Prefix returns the result build makes of the items from offset on that
// fit the call's output bound: all of them when they fit, else the first
// ones and next, the offset of the following window (0 when none
// follows). An offset past the last item is invalid_input; a first item
// too large alone fails with limit. unit names an item in messages
// ("member", "hit").
func Prefix[T, R any](call *kernel.Call, items []T, offset int, unit string, build func(shown []T, next int) R) (R, error) {
	var zero R
	if offset < 0 || (offset > 0 && offset >= len(items)) {
		return zero, fault.New(fault.InvalidInput, "offset %d is past the last %s; there are %d", offset, unit, len(items))
	}
	rest := items[offset:]
	result := func(n int) R {
		next := 0
		if n < len(rest) {
			next = offset + n
		}
		return build(rest[:n], next)
	}
	n, err := FitPrefix(call.MaxOutputBytes, len(rest), func(n int) any { return result(n) })
	switch {
	case err != nil:
		return zero, err
	case n == 0 && len(rest) > 0:
		return zero, UnitTooLarge(call, fmt.Sprintf("%s %d", unit, offset+1), 0, "a "+unit+" is never shown in part")
	}
	return result(n), nil
}
