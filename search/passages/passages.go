// Package passages finds every exact occurrence of a literal in one source
// text, optionally within caller-given regions (the pages of a document,
// say), and reports each with code-point offsets, its region and context
// that never crosses the region's boundary.
//
// Matching is byte-exact by default: no normalisation of any kind, so
// punctuation, whitespace and composed or decomposed accents match only
// themselves. On request it folds case with Unicode simple case folding
// (each character to one character, so offsets stay exact; "ß" does not
// match "ss"). The result says which matching was used.
//
// Matches are leftmost and non-overlapping ("aa" occurs twice in
// "aaaaa"). With regions, a match counts only when it lies entirely
// inside one region; text outside every region is not searched.
//
// Offsets are Unicode code points from the start of the source, half-open
// [start, end), the unit regions are given in. The source must be valid
// UTF-8. At most limits.PassagesMaxMatches matches are returned; the
// total is always exact.
//
// The search runs on the source's bytes: vectorised scans for the
// query's rare bytes (internal/literal), each candidate verified. It
// counts code points only up to the last returned match, and validates
// UTF-8 on a second core meanwhile.
package passages

import (
	"context"
	"runtime/debug"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/literal"
	"github.com/capkit/capkit/limits"
)

// Matching names how a search compared text.
const (
	Exact      = "exact"
	SimpleFold = "simple_case_folding"
)

// Region is a half-open range [Start, End) of code points of the source.
type Region struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Options refine Find. A nil *Options is valid: whole source, exact
// matching, limits.PassagesDefaultMatches matches.
type Options struct {
	// Regions, when not empty, restrict the search to these ranges, which
	// must not overlap and must lie inside the source; any number is
	// allowed. Matches name their region by its index in this slice.
	Regions []Region
	// IgnoreCase matches with Unicode simple case folding.
	IgnoreCase bool
	// Limit is how many matches to return, 1..limits.PassagesMaxMatches;
	// zero means limits.PassagesDefaultMatches.
	Limit int
}

// Match is one occurrence.
type Match struct {
	Start  int64 `json:"start"`
	End    int64 `json:"end"`
	Region int   `json:"region"`
	// Before and After are up to limits.PassagesContextRunes code points
	// of the source on each side, exactly as they are, cut at the
	// region's boundary.
	Before string `json:"before"`
	// Text is the matched text as it is in the source.
	Text  string `json:"text"`
	After string `json:"after"`
}

// Result is what Find found.
type Result struct {
	// Total counts every match, returned or not.
	Total   int64   `json:"total"`
	Matches []Match `json:"matches"`
	// Matching is Exact or SimpleFold.
	Matching string `json:"matching"`
	// Limit is the number of matches that could be returned.
	Limit int `json:"limit"`
}

// Truncated reports whether matches exist beyond those returned.
func (r *Result) Truncated() bool { return r.Total > int64(len(r.Matches)) }

// Find searches source for query.
func Find(ctx context.Context, source []byte, query string, opts *Options) (*Result, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	limit, err := checkArgs(source, query, o.Limit)
	if err != nil {
		return nil, err
	}
	if len(source) < parallelBytes {
		var res *Result
		err := guard(func() (err error) {
			if err = validUTF8(ctx, source); err == nil {
				res, err = find(ctx, source, query, &o, limit)
			}
			return err
		})
		return res, err
	}
	// Validate on another core while searching: a large source costs
	// about the longer of the two, not their sum.
	vctx, cancel := context.WithCancel(ctx)
	defer cancel()
	valid := make(chan error, 1)
	go func() { valid <- guard(func() error { return validUTF8(vctx, source) }) }()
	var res *Result
	err = guard(func() (err error) {
		res, err = find(ctx, source, query, &o, limit)
		return err
	})
	if err != nil {
		cancel()
	}
	// Wait for the validation even after a failure: source must not be
	// touched once Find returns.
	if verr := <-valid; err == nil {
		err = verr
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// parallelBytes is the source size from which Find validates and searches
// at once.
const parallelBytes = 1 << 20

func find(ctx context.Context, source []byte, query string, o *Options, limit int) (*Result, error) {
	spans, err := mapRegions(ctx, source, o.Regions)
	if err != nil {
		return nil, err
	}
	s := &search{src: source, limit: limit, res: &Result{Matching: Exact, Limit: limit, Matches: []Match{}}}
	if !o.IgnoreCase && len(o.Regions) == 0 && len(source) >= parallelBytes && borderless(query) {
		return s.res, s.halves(ctx, newExactMatcher([]byte(query)), spans[0])
	}
	var m matcher = newExactMatcher([]byte(query))
	if o.IgnoreCase {
		s.res.Matching = SimpleFold
		m = newFoldMatcher(query)
	}
	for _, sp := range spans {
		if err := s.region(ctx, m, sp); err != nil {
			return nil, err
		}
	}
	return s.res, nil
}

func checkArgs(source []byte, query string, limit int) (int, error) {
	switch {
	case len(source) > limits.PassagesMaxSourceBytes:
		return 0, fault.LimitExceeded("source bytes", limits.PassagesMaxSourceBytes, int64(len(source)))
	case query == "":
		return 0, fault.New(fault.InvalidInput, "the query is empty: give the literal text to find")
	case len(query) > limits.PassagesMaxQueryBytes:
		return 0, fault.LimitExceeded("query bytes", limits.PassagesMaxQueryBytes, int64(len(query)))
	case !utf8.ValidString(query):
		return 0, fault.New(fault.InvalidInput, "the query is not valid UTF-8")
	case limit < 0:
		return 0, fault.New(fault.InvalidInput, "limit must be positive")
	case limit > limits.PassagesMaxMatches:
		return 0, fault.LimitExceeded("limit", limits.PassagesMaxMatches, int64(limit))
	case limit == 0:
		return limits.PassagesDefaultMatches, nil
	}
	return limit, nil
}

// checkEvery is how many bytes are searched or scanned between two looks
// at the context.
const checkEvery = 4 << 20

// span is a region as byte offsets, with its code-point start and its
// index in the caller's slice.
type span struct {
	start, end int
	cpStart    int64
	index      int
}

// search accumulates the result over the regions, in source order.
type search struct {
	src   []byte
	limit int
	res   *Result
	// counted is the byte offset up to which code points have been
	// counted, cp their number.
	counted int
	cp      int64
}

// region searches one span.
func (s *search) region(ctx context.Context, m matcher, sp span) error {
	if s.counted < sp.start {
		s.counted, s.cp = sp.start, sp.cpStart
	}
	return m.each(ctx, s.src[sp.start:sp.end], func(at, n int) bool {
		s.res.Total++
		if len(s.res.Matches) < s.limit {
			s.add(sp, sp.start+at, sp.start+at+n)
		}
		return true
	})
}

// add records the match at bytes [from, to) of sp.
func (s *search) add(sp span, from, to int) {
	s.cp += countRunes(s.src[s.counted:from])
	s.counted = from
	start := s.cp
	end := start + countRunes(s.src[from:to])
	s.res.Matches = append(s.res.Matches, Match{
		Start:  start,
		End:    end,
		Region: sp.index,
		Before: string(s.src[back(s.src, from, sp.start, limits.PassagesContextRunes):from]),
		Text:   string(s.src[from:to]),
		After:  string(s.src[to:forward(s.src, to, sp.end, limits.PassagesContextRunes)]),
	})
}

// back returns the offset n characters before at, not before floor.
func back(src []byte, at, floor, n int) int {
	for ; n > 0 && at > floor; n-- {
		at--
		for at > floor && !utf8.RuneStart(src[at]) {
			at--
		}
	}
	return at
}

// forward returns the offset n characters after at, not after ceil.
func forward(src []byte, at, ceil, n int) int {
	for ; n > 0 && at < ceil; n-- {
		at++
		for at < ceil && !utf8.RuneStart(src[at]) {
			at++
		}
	}
	return at
}

// matcher finds the leftmost non-overlapping matches in b and calls fn
// with each one's byte offset and length until fn returns false.
type matcher interface {
	each(ctx context.Context, b []byte, fn func(at, n int) bool) error
}

// exactMatcher finds byte-exact matches by the query's rare bytes
// (internal/literal).
type exactMatcher struct {
	q []byte
	f *literal.Finder
}

func newExactMatcher(q []byte) *exactMatcher {
	return &exactMatcher{q: q, f: literal.New(q)}
}

func (m *exactMatcher) each(ctx context.Context, b []byte, fn func(at, n int) bool) error {
	n := len(m.q)
	c := m.f.Cursor() // one search through b: what it learns carries over windows
	for off := 0; off+n <= len(b); {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Search a window of checkEvery bytes (plus what a match starting
		// in it needs), so the context is seen between windows.
		win := b[off:min(len(b), off+checkEvery+n-1)]
		for at := 0; ; {
			i := c.Next(win[at:])
			if i < 0 {
				break
			}
			if !fn(off+at+i, n) {
				return nil
			}
			at += i + n
		}
		off += len(win) - n + 1
	}
	return nil
}

// ErrChanged is the cause of the integrity failure of a source that
// changed while it was searched.
var ErrChanged = fault.NewMark("source changed while it was searched")

func changed() error {
	return fault.Wrap(fault.Integrity, ErrChanged, "the source changed while it was searched: search again when it is stable")
}

// guard runs fn with faults on memory (a mapped source truncated
// meanwhile) turned into a failure instead of a crash.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(interface{ Addr() uintptr }); ok {
				err = changed()
				return
			}
			panic(r)
		}
	}()
	return fn()
}
