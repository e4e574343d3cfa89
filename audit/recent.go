package audit

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Recent keeps the newest events in memory, at most a bound of them: a
// Sink beside the others, and a Source the dashboard reads when no trail
// is configured. Its cursors are the events' numbers in arrival order
// (the first is 1). It holds no chain: Chain says so.
type Recent struct {
	mu      sync.Mutex
	ring    []*Event // ring[(seq-1) % len(ring)] is event seq
	last    uint64   // the number of the newest event; 0 when none
	changed chan struct{}
}

// NewRecent returns a Recent keeping at most n events
// (limits.DashboardRingEvents when n <= 0).
func NewRecent(n int) *Recent {
	if n <= 0 {
		n = limits.DashboardRingEvents
	}
	return &Recent{ring: make([]*Event, n), changed: make(chan struct{})}
}

// Sink is the sink that feeds r.
func (r *Recent) Sink() Sink { return recentSink{r} }

type recentSink struct{ r *Recent }

// Close keeps nothing: the events stay readable.
func (s recentSink) Close(context.Context) error { return nil }

func (s recentSink) Write(e *Event) { s.r.write(e) }

// Close releases nothing: a Recent is memory only.
func (r *Recent) Close() error { return nil }

// write keeps a copy of e, the oldest event making room.
func (r *Recent) write(e *Event) {
	c := *e
	c.JSON = append([]byte(nil), e.JSON...)
	r.mu.Lock()
	r.last++
	r.ring[(r.last-1)%uint64(len(r.ring))] = &c
	ch := r.changed
	r.changed = make(chan struct{})
	r.mu.Unlock()
	close(ch)
}

// oldestLocked is the number of the oldest event kept.
func (r *Recent) oldestLocked() uint64 {
	if r.last < uint64(len(r.ring)) {
		return 1
	}
	return r.last - uint64(len(r.ring)) + 1
}

func (r *Recent) atLocked(seq uint64) *Event { return r.ring[(seq-1)%uint64(len(r.ring))] }

func parseSeq(cursor string) (uint64, error) {
	n, err := strconv.ParseUint(cursor, 10, 64)
	if err != nil {
		return 0, fault.New(fault.InvalidInput, "cursor %q is not one this source gave", cursor)
	}
	return n, nil
}

// Events is a window of at most limit events f selects, newest first,
// older than cursor.
func (r *Recent) Events(ctx context.Context, f Filter, cursor string, limit int) (*Page, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	from := r.last
	if cursor != "" {
		n, err := parseSeq(cursor)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return &Page{}, nil
		}
		from = min(n-1, r.last)
	}
	p := &Page{}
	for seq := from; seq >= r.oldestLocked() && seq > 0; seq-- {
		e := r.atLocked(seq)
		if !f.Matches(e) {
			continue
		}
		if len(p.Events) == limit {
			p.Next = strconv.FormatUint(seq+1, 10)
			break
		}
		p.Events = append(p.Events, e)
	}
	return p, ctx.Err()
}

// After is at most limit events f selects that arrived after cursor,
// oldest first, and the position after the last one looked at. Events
// that left the ring since cursor are not seen.
func (r *Recent) After(ctx context.Context, f Filter, cursor string, limit int) ([]*Event, string, error) {
	var from uint64
	if cursor != "" {
		n, err := parseSeq(cursor)
		if err != nil {
			return nil, cursor, err
		}
		from = n
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Event
	seq := max(from+1, r.oldestLocked())
	for ; seq <= r.last && len(out) < limit; seq++ {
		if e := r.atLocked(seq); f.Matches(e) {
			out = append(out, e)
		}
	}
	return out, strconv.FormatUint(max(seq-1, from), 10), ctx.Err()
}

// Position is the number of the newest event, "0" when none arrived.
func (r *Recent) Position(context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strconv.FormatUint(r.last, 10), nil
}

// Stats counts the calls f selects among those kept.
func (r *Recent) Stats(ctx context.Context, f Filter) (*Stats, error) {
	var a Accumulator
	r.mu.Lock()
	for seq := r.oldestLocked(); seq <= r.last && seq > 0; seq++ {
		if e := r.atLocked(seq); f.Matches(e) {
			a.Add(e)
		}
	}
	r.mu.Unlock()
	return a.Stats(limits.AuditBuckets), ctx.Err()
}

// Chain is the count of events kept: an in-memory source has no chain
// (Streams 0).
func (r *Recent) Chain(context.Context) (*ChainState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.last - r.oldestLocked() + 1
	if r.last == 0 {
		kept = 0
	}
	return &ChainState{Total: kept}, nil
}

// Names are the actors and tools of the events kept, in name order, at
// most limits.AuditMaxNames each.
func (r *Recent) Names(ctx context.Context) ([]string, []string, error) {
	actors, tools := map[string]bool{}, map[string]bool{}
	r.mu.Lock()
	for seq := r.oldestLocked(); seq <= r.last && seq > 0; seq++ {
		e := r.atLocked(seq)
		if e.Actor != "" {
			actors[e.Actor] = true
		}
		if e.Tool != "" {
			tools[e.Tool] = true
		}
	}
	r.mu.Unlock()
	return sortedNames(actors), sortedNames(tools), ctx.Err()
}

// Changed returns a channel closed when the next event arrives.
func (r *Recent) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// sortedNames are m's keys in order, at most limits.AuditMaxNames.
func sortedNames(m map[string]bool) []string {
	names := slices.Sorted(maps.Keys(m))
	return names[:min(len(names), limits.AuditMaxNames)]
}
