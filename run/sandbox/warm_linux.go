package sandbox

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/run/sandbox/internal/helper"
)

// pending is a helper being started for a view.
type pending struct {
	key   string
	ident string
	// started is closed when the start ended: h is the helper, or nil
	// when it could not be started.
	started chan struct{}
	h       *helperProc
}

// viewKey names what a warm helper was built for: the helper command,
// the containment, and every field of the spec but the call's.
func viewKey(msg *message, helperCmd []string) string {
	return strconv.Quote(strings.Join(helperCmd, "\x00")) + string(msg.Encode())
}

// identity is what the host's tree looks like at the view's roots and
// protected paths: a helper built before one of them was replaced,
// created or removed shows the old one, so it is not used.
func identity(s *helper.View) string {
	var b strings.Builder
	for _, p := range slices.Concat(s.Writable, s.ReadOnly, s.Protected) {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			fmt.Fprintf(&b, "%q -\n", p)
			continue
		}
		fmt.Fprintf(&b, "%q %d %d %o\n", p, st.Dev, st.Ino, st.Mode&unix.S_IFMT)
	}
	return b.String()
}

// take returns the warm helper if it was built for key and the tree it
// shows is still the host's; any other is killed.
func (w *Warm) take(msg *message, key string) *helperProc {
	w.mu.Lock()
	p := w.next
	w.next = nil
	w.mu.Unlock()
	if p == nil {
		return nil
	}
	<-p.started
	if p.h == nil {
		return nil
	}
	if p.key != key || p.ident != identity(msg.View) {
		go p.h.discard()
		return nil
	}
	return p.h
}

// refill starts, in the background, the helper for the next call over
// msg's view, replacing the one held: at once, or when later runs the
// start it is given.
func (w *Warm) refill(msg *message, key string, helperCmd []string, later func(func())) {
	m, view := *msg, *msg.View
	m.View = &view
	p := &pending{key: key, ident: identity(&view), started: make(chan struct{})}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	old := w.next
	w.next = p
	w.mu.Unlock()
	start := func() {
		old.drop()
		// Only after the identity is taken does the helper clone the
		// tree: a change in between makes them differ.
		p.h, _ = startHelper(&m, helperCmd)
		close(p.started)
	}
	if later != nil {
		later(start)
		return
	}
	go start()
}

// drop kills the helper once it is started.
func (p *pending) drop() {
	if p == nil {
		return
	}
	<-p.started
	if p.h != nil {
		p.h.discard()
	}
}

// Close kills the helper held (waiting for its start to end) and starts
// no other.
func (w *Warm) Close() {
	w.mu.Lock()
	p := w.next
	w.next, w.closed = nil, true
	w.mu.Unlock()
	p.drop()
}
