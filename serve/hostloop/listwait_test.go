package hostloop

import (
	"context"
	"testing"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// TestFirstListingWaitsForStartingTools: the loop's first listing waits
// for a tool whose offer is not known yet (another server's, starting)
// for limits.UpstreamListWait, so a host that lists once (capkit tools
// --format) sees a server that lists just inside the wait; one that
// lists just past it is left out of that listing and offered from the
// next on, and later listings do not wait.
func TestFirstListingWaitsForStartingTools(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		inside bool
	}{{"just inside the wait", true}, {"just past the wait", false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			known := make(chan struct{})
			var deadline time.Time
			offered := func(ctx context.Context, _ *kernel.Session) error {
				select {
				case <-known:
					return nil
				default:
				}
				if ctx.Err() != nil {
					return fault.New(fault.Unavailable, "starting")
				}
				deadline, _ = ctx.Deadline()
				if c.inside {
					// The server lists half a second before the wait ends.
					time.Sleep(time.Until(deadline) - 500*time.Millisecond)
					close(known)
					return nil
				}
				<-ctx.Done()
				close(known) // the server lists as the wait ends: too late
				return ctx.Err()
			}
			s := upstreamSession(t, map[string]func(context.Context, *kernel.Session) error{"ext__starting": offered})
			l := newLoop(t, s, OpenAI, nil)
			start := time.Now()
			first := names(t, l)
			if d := deadline.Sub(start); d < limits.UpstreamListWait || d > limits.UpstreamListWait+time.Second {
				t.Errorf("the first listing waited until %v after it began, want %v", d, limits.UpstreamListWait)
			}
			if first["ext__starting"] != c.inside {
				t.Errorf("first listing has the tool: %v, want %v", first["ext__starting"], c.inside)
			}
			if !names(t, l)["ext__starting"] {
				t.Error("the next listing does not have the tool the server now lists")
			}
		})
	}
}

// upstreamSession is a session granted the upstream "ext" on a runtime
// of its tools, by name, each offered as its Meta.Offered says (nil:
// always).
func upstreamSession(t *testing.T, tools map[string]func(context.Context, *kernel.Session) error) *kernel.Session {
	t.Helper()
	b := kernel.NewBuilder(nil)
	ext := capability.Upstream("ext")
	for name, offered := range tools {
		if err := b.Register(kernel.Policy{Name: name}, kernel.Meta{Effect: ext, Description: "A tool.", Offered: offered},
			schema(t, `{"type":"object"}`), nil, func(context.Context, *kernel.Call) (*kernel.Result, error) {
				return &kernel.Result{Text: "x"}, nil
			}); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	s := testkit.Session(t, rt, testkit.Grant(t, nil, ext))
	t.Cleanup(s.Close)
	return s
}

func names(t *testing.T, l *Loop) map[string]bool {
	t.Helper()
	specs, err := l.Specs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, s := range specs {
		out[s.Name] = true
	}
	return out
}

// TestAllGrantedLeavesOutWithdrawn: AllGranted lists every granted tool
// the session is offered now, not a withdrawn one (another server's
// tool whose definition no longer matches its lock), with discovery on
// or off.
func TestAllGrantedLeavesOutWithdrawn(t *testing.T) {
	withdrawn := func(context.Context, *kernel.Session) error {
		return fault.New(fault.Integrity, "the definition changed")
	}
	s := upstreamSession(t, map[string]func(context.Context, *kernel.Session) error{"ext__same": nil, "ext__changed": withdrawn})
	for _, all := range []bool{false, true} {
		got := names(t, newLoop(t, s, OpenAI, &Options{AllGranted: all}))
		if !got["ext__same"] || got["ext__changed"] {
			t.Errorf("AllGranted %v lists %v: want ext__same and not the withdrawn ext__changed", all, got)
		}
	}
}
