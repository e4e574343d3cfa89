package dashboard

import (
	"bytes"
	"net/http"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/capkit/capkit/limits"
)

// LiveMessage is one message of the live stream (event "events"): the
// events that arrived since the last one, newest first.
type LiveMessage struct {
	Events []Row `json:"events"`
	// Position is where the stream is now.
	Position string `json:"position"`
}

// stream serves /api/live: server-sent events of the calls f selects as
// they arrive, after the position given (?after=, else now), at most
// limits.DashboardLiveRows a message; at most
// limits.DashboardLiveClients streams at once (503 beyond).
func (d *Dashboard) stream(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := ParseFilter(q)
	if err != nil {
		d.fail(w, err)
		return
	}
	select {
	case d.live <- struct{}{}:
		defer func() { <-d.live }()
	default:
		w.Header().Set("Retry-After", "5")
		d.refuse(w, r, http.StatusServiceUnavailable, "too many live streams; retry later")
		return
	}
	ctx := r.Context()
	pos := q.Get("after")
	if pos == "" {
		if pos, err = d.src.Position(ctx); err != nil {
			d.fail(w, err)
			return
		}
	}
	// A cursor the source did not give fails here, before the stream.
	if _, _, err := d.src.After(ctx, f, pos, 1); err != nil {
		d.fail(w, err)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte("retry: 2000\n: open\n\n"))
	if rc.Flush() != nil {
		return
	}
	poll := time.NewTicker(limits.DashboardLiveWait)
	defer poll.Stop()
	lastSent := time.Now()
	var buf bytes.Buffer
	for {
		changed := d.src.Changed()
		evs, next, err := d.src.After(ctx, f, pos, limits.DashboardLiveRows)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("dashboard: live stream ended: " + err.Error())
			}
			return
		}
		pos = next
		if len(evs) > 0 {
			buf.Reset()
			buf.WriteString("event: events\ndata: ")
			jsonv2.MarshalWrite(&buf, LiveMessage{Events: rows(reversed(evs)), Position: pos})
			buf.WriteString("\n\n")
			if _, err := w.Write(buf.Bytes()); err != nil || rc.Flush() != nil {
				return
			}
			lastSent = time.Now()
		}
		if len(evs) == limits.DashboardLiveRows {
			continue // more are waiting
		}
		if time.Since(lastSent) >= limits.DashboardLivePing {
			if _, err := w.Write([]byte(": ping\n\n")); err != nil || rc.Flush() != nil {
				return
			}
			lastSent = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-poll.C:
		}
	}
}
