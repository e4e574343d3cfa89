package audit

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Filter selects events. The zero value selects every event.
type Filter struct {
	Actor string
	Tool  string
	// Outcome is "ok", "error" (any outcome but ok), or a fault code.
	Outcome string
	// From and To bound the event time (From inclusive, To exclusive);
	// zero means unbounded.
	From, To time.Time
}

// OutcomeError is the Filter.Outcome of every call that did not succeed.
const OutcomeError = "error"

// Matches reports whether e passes f.
func (f *Filter) Matches(e *Event) bool {
	switch {
	case f.Actor != "" && e.Actor != f.Actor,
		f.Tool != "" && e.Tool != f.Tool,
		!f.From.IsZero() && e.Time.Before(f.From),
		!f.To.IsZero() && !e.Time.Before(f.To):
		return false
	}
	return MatchesOutcome(f.Outcome, e.Msg, e.Outcome)
}

// MatchesOutcome reports whether an event of msg and outcome passes an
// outcome filter: only calls have outcomes.
func MatchesOutcome(want, msg, outcome string) bool {
	switch want {
	case "":
		return true
	case OutcomeError:
		return msg == MsgCall && outcome != OutcomeOK
	}
	return msg == MsgCall && outcome == want
}

// Page is a window of events, newest first.
type Page struct {
	Events []*Event `json:"-"`
	// Next is the cursor of the next (older) window, "" at the oldest.
	Next string `json:"next,omitempty"`
}

// Stats are the counts of the calls a filter selects.
type Stats struct {
	Calls    int64   `json:"calls"`
	Errors   int64   `json:"errors"`
	Denials  int64   `json:"denials"`
	Limits   int64   `json:"limits"`
	Tools    []Group `json:"tools"`
	Actors   []Group `json:"actors"`
	Policies []Count `json:"policies"`
	// Buckets are calls and errors over time, BucketSeconds each, from
	// the first call selected to the last.
	Buckets       []Bucket `json:"buckets"`
	BucketSeconds int64    `json:"bucket_seconds"`
}

// Group is the calls of one tool or actor.
type Group struct {
	Name    string `json:"name"`
	Calls   int64  `json:"calls"`
	Errors  int64  `json:"errors"`
	Denials int64  `json:"denials"`
	Limits  int64  `json:"limits"`
	// P50, P95 and P99 are duration percentiles in microseconds (the
	// nearest-rank method).
	P50 int64 `json:"p50_us"`
	P95 int64 `json:"p95_us"`
	P99 int64 `json:"p99_us"`
}

// Count is how many calls one name (a policy) accounts for.
type Count struct {
	Name  string `json:"name"`
	Calls int64  `json:"calls"`
}

// Bucket is the calls in one stretch of time.
type Bucket struct {
	Start  time.Time `json:"start"`
	Calls  int64     `json:"calls"`
	Errors int64     `json:"errors"`
}

// ChainState is what a reader knows of its trail's chain.
type ChainState struct {
	// Records counts the records verified, of Total read so far; Streams
	// the chains (the file's one, or a store's one per writer).
	Records uint64 `json:"records"`
	Total   uint64 `json:"total"`
	Streams int    `json:"streams"`
	// Head is the last verified record's hash (a file's).
	Head string `json:"head,omitempty"`
	// Broken says where the chain first fails; "" while it holds.
	Broken string `json:"broken,omitempty"`
	// Missing counts records a store's chains are waiting for (a gap a
	// spool has not filled yet, or events reported lost).
	Missing uint64 `json:"missing,omitempty"`
	// Partial says the reader has not yet read its trail to the end (a
	// file's index being built): counts are of the Total records read so
	// far, ReadBytes of the SizeBytes the files held when opened.
	Partial   bool  `json:"partial,omitempty"`
	ReadBytes int64 `json:"read_bytes,omitempty"`
	SizeBytes int64 `json:"size_bytes,omitempty"`
}

// Source is a trail a reader asks about: a file (audit/trail) or a store
// (audit/pgstore).
type Source interface {
	// Events is a window of at most limit events f selects, newest first,
	// older than cursor ("" for the newest).
	Events(ctx context.Context, f Filter, cursor string, limit int) (*Page, error)
	// After is at most limit events f selects that arrived after cursor
	// (a Position), oldest first, and the position after the last one
	// looked at.
	After(ctx context.Context, f Filter, cursor string, limit int) ([]*Event, string, error)
	// Position is the cursor of the newest event there is.
	Position(ctx context.Context) (string, error)
	// Stats counts the calls f selects.
	Stats(ctx context.Context, f Filter) (*Stats, error)
	// Chain is the state of the trail's chain.
	Chain(ctx context.Context) (*ChainState, error)
	// Names are the actors and tools the trail names, for a reader's
	// choices.
	Names(ctx context.Context) (actors, tools []string, err error)
	// Changed returns a channel that is closed when events arrive.
	Changed() <-chan struct{}
	Close() error
}

// Accumulator computes Stats over events given one at a time: what a
// reader holding its events in memory uses.
type Accumulator struct {
	tools, actors map[string]*acc
	policies      map[string]int64
	times         []int64 // unix nanoseconds of each call, with its
	failed        []bool
	st            Stats
}

type acc struct {
	g         Group
	durations []int64
}

// Add counts e when it is a call.
func (a *Accumulator) Add(e *Event) {
	if e.Msg != MsgCall {
		return
	}
	if a.tools == nil {
		a.tools, a.actors, a.policies = map[string]*acc{}, map[string]*acc{}, map[string]int64{}
	}
	failed := e.Outcome != OutcomeOK
	a.st.Calls++
	for _, g := range []*acc{group(a.tools, e.Tool), group(a.actors, e.Actor)} {
		g.g.Calls++
		g.durations = append(g.durations, e.DurationUS)
		if failed {
			g.g.Errors++
		}
		switch e.Outcome {
		case "denied":
			g.g.Denials++
		case "limit":
			g.g.Limits++
		}
	}
	if failed {
		a.st.Errors++
	}
	switch e.Outcome {
	case "denied":
		a.st.Denials++
	case "limit":
		a.st.Limits++
	}
	if e.Policy != "" {
		a.policies[e.Policy]++
	}
	a.times = append(a.times, e.Time.UnixNano())
	a.failed = append(a.failed, failed)
}

func group(m map[string]*acc, name string) *acc {
	g := m[name]
	if g == nil {
		g = &acc{g: Group{Name: name}}
		m[name] = g
	}
	return g
}

// Stats are the counts of the calls added, the time they span cut into
// at most buckets buckets (of BucketSize, from a multiple of it since the
// Unix epoch).
func (a *Accumulator) Stats(buckets int) *Stats {
	st := a.st
	st.Tools, st.Actors = groups(a.tools), groups(a.actors)
	for name, n := range a.policies {
		st.Policies = append(st.Policies, Count{name, n})
	}
	slices.SortFunc(st.Policies, func(x, y Count) int {
		if x.Calls != y.Calls {
			return int(y.Calls - x.Calls)
		}
		return strings.Compare(x.Name, y.Name)
	})
	if len(a.times) > 0 {
		lo, hi := slices.Min(a.times), slices.Max(a.times)
		size := BucketSize(time.Unix(0, lo), time.Unix(0, hi), buckets)
		start := time.Unix(0, lo-lo%int64(size))
		n := int(time.Unix(0, hi).Sub(start)/size) + 1
		st.Buckets = make([]Bucket, n)
		for i := range st.Buckets {
			st.Buckets[i].Start = start.Add(time.Duration(i) * size).UTC()
		}
		for i, t := range a.times {
			b := &st.Buckets[int(time.Unix(0, t).Sub(start)/size)]
			b.Calls++
			if a.failed[i] {
				b.Errors++
			}
		}
		st.BucketSeconds = int64(size / time.Second)
	}
	return &st
}

func groups(m map[string]*acc) []Group {
	out := make([]Group, 0, len(m))
	for _, g := range m {
		slices.Sort(g.durations)
		g.g.P50, g.g.P95, g.g.P99 = Percentile(g.durations, 50), Percentile(g.durations, 95), Percentile(g.durations, 99)
		out = append(out, g.g)
	}
	slices.SortFunc(out, func(x, y Group) int {
		if x.Calls != y.Calls {
			return int(y.Calls - x.Calls)
		}
		return strings.Compare(x.Name, y.Name)
	})
	return out
}

// Percentile is the p-th percentile of sorted values by the nearest-rank
// method (what PostgreSQL's percentile_disc computes); 0 when empty.
func Percentile(sorted []int64, p int) int64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[max(rank, 1)-1]
}

// bucketSizes are the sizes time series are cut into.
var bucketSizes = []time.Duration{
	time.Second, 5 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour,
}

// BucketSize is the smallest bucket size that cuts from..to into at most
// n buckets.
func BucketSize(from, to time.Time, n int) time.Duration {
	span := to.Sub(from)
	for _, s := range bucketSizes {
		if span/s < time.Duration(n) {
			return s
		}
	}
	return bucketSizes[len(bucketSizes)-1]
}
