package audit

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"

	"github.com/capkit/capkit/limits"
)

// Sink receives every event of a trail.
type Sink interface {
	// Write takes one event; it is called from the goroutine that logged
	// it, so it returns promptly (a sink that sends over a network queues),
	// and must be safe for concurrent use. e and e.JSON are not kept past
	// the call: a sink copies what it keeps. A sink says its own failures
	// (Stats, its log): Write has nothing to return them to.
	Write(e *Event)
	// Close delivers or keeps what the sink holds, within ctx, and
	// releases it.
	Close(ctx context.Context) error
}

// Handler is the slog handler an audit logger is built on (under
// kernel.AuditHandler, which adds a call's identity): it encodes each
// record of level Info or above once, canonically, and hands it to every
// sink in order.
type Handler struct {
	sinks  []Sink
	frames []frame
}

// NewHandler returns a handler writing to sinks.
func NewHandler(sinks ...Sink) *Handler { return &Handler{sinks: sinks} }

// Sinks are the handler's sinks.
func (h *Handler) Sinks() []Sink { return h.sinks }

// Enabled reports whether l is logged: Info and above.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

// Handle encodes r and writes it to every sink, on a writer goroutine
// (writers), and returns once they have: the event is written when the
// call that logged it returns, as before.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	w := writes.Get().(*write)
	w.h, w.r = h, r
	writers.Start(w)
	<-w.done
	p := w.panic
	*w = write{done: w.done}
	writes.Put(w)
	if p != nil {
		panic(p)
	}
	return nil
}

// handle encodes r and writes it to every sink. The event and its JSON
// are reused once every sink's Write has returned (Sink says so).
func (h *Handler) handle(r *slog.Record) {
	c := encoders.Get().(*encoder)
	defer encoders.Put(c)
	c.event = Event{}
	c.out = c.encode(c.out[:0], &c.event, *r, h.frames)
	for _, s := range h.sinks {
		s.Write(&c.event)
	}
}

// Encode is the event of record r: its canonical JSON and the fields it
// names. An event past limits.AuditMaxEventBytes is replaced by one
// saying so.
func Encode(r slog.Record) *Event {
	c := encoders.Get().(*encoder)
	defer encoders.Put(c)
	e := &Event{}
	c.encode(nil, e, r, nil)
	return e
}

// encode sets e to the event of r, its JSON appended to dst (nil: made
// to measure), and returns the JSON.
func (c *encoder) encode(dst []byte, e *Event, r slog.Record, frames []frame) []byte {
	*e = Event{CallsLeft: -1}
	e.JSON = c.encodeRecord(dst, e, r, frames)
	if len(e.JSON) > limits.AuditMaxEventBytes {
		big := slog.NewRecord(r.Time, r.Level, "audit event too large", 0)
		big.AddAttrs(slog.String("event_msg", r.Message), slog.Int("bytes", len(e.JSON)),
			slog.String("actor", e.Actor), slog.String("session", e.Session), slog.String("request", e.Request), slog.String("tool", e.Tool),
			slog.String("note", "replaced: an audit event holds at most "+strconv.Itoa(limits.AuditMaxEventBytes)+" bytes"))
		*e = Event{CallsLeft: -1}
		e.JSON = c.encodeRecord(dst[:0], e, big, nil)
	}
	return e.JSON
}

// WithAttrs returns a handler adding attrs to every record, in the group
// opened last.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	c := *h
	c.frames = slices.Clone(h.frames)
	if len(c.frames) == 0 {
		c.frames = []frame{{}}
	}
	last := &c.frames[len(c.frames)-1]
	last.attrs = append(slices.Clip(last.attrs), attrs...)
	return &c
}

// WithGroup returns a handler putting the attributes that follow in
// group name.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.frames = slices.Clone(h.frames)
	if len(c.frames) == 0 {
		c.frames = []frame{{}}
	}
	c.frames = append(c.frames, frame{group: name})
	return &c
}

// Close closes every sink within ctx, the last first (a sink that says,
// as it closes, that events were lost says it to those before it), and
// returns their failures joined.
func (h *Handler) Close(ctx context.Context) error {
	var errs []error
	for i := len(h.sinks) - 1; i >= 0; i-- {
		errs = append(errs, h.sinks[i].Close(ctx))
	}
	return errors.Join(errs...)
}
