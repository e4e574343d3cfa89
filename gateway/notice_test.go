package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/capkit/capkit/limits"
)

// TestPipeNoticeWait: the notice that a call was cancelled waits for its
// turn to write up to limits.UpstreamNoticeWait and no longer. Another
// writer holds the turn from the cancel on: released a moment before
// the wait ends, the notice follows its line; a moment after, the notice
// was given up, and the next line written is the next message. The
// bubble's clock is the test's (testing/synctest), so the edge is exact
// and no second of real time passes; the pipes are io.Pipe, whose waits
// the bubble sees.
func TestPipeNoticeWait(t *testing.T) {
	const notice = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"capkit-call-1","reason":"context canceled"}}`
	for _, tc := range []struct {
		name string
		held time.Duration
		told bool
	}{
		{"released within the wait", limits.UpstreamNoticeWait - time.Nanosecond, true},
		{"released past it", limits.UpstreamNoticeWait + time.Nanosecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fromUpstream, _ := io.Pipe() // the upstream sends nothing
				toUpstream, out := io.Pipe()
				c := newPipeConn(fromUpstream, out, new(atomic.Bool))
				lines := make(chan string, 8)
				go func() {
					defer close(lines)
					r := bufio.NewReader(toUpstream)
					for {
						l, err := r.ReadString('\n')
						if err != nil {
							return
						}
						lines <- strings.TrimSuffix(l, "\n")
					}
				}()
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					_, err := c.call(ctx, "echo", nil, "")
					done <- err
				}()
				if l := <-lines; !strings.Contains(l, `"id":"capkit-call-1"`) {
					t.Fatalf("the request: %s", l)
				}
				if err := c.takeTurn(context.Background()); err != nil {
					t.Fatal(err)
				}
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Fatalf("the call: %v", err)
				}
				time.Sleep(tc.held)
				if err := c.writeTurn(context.Background(), []byte(sentinel+"\n")); err != nil {
					t.Fatal(err)
				}
				if l := <-lines; l != sentinel {
					t.Fatalf("written in the turn held: %s", l)
				}
				synctest.Wait()
				var after []string
				for len(lines) > 0 {
					after = append(after, <-lines)
				}
				if told := len(after) == 1 && after[0] == notice; told != tc.told || len(after) > 1 {
					t.Errorf("held %v of the %v wait: written after it %q, want the notice: %v", tc.held, limits.UpstreamNoticeWait, after, tc.told)
				}
				c.Close()
				for range lines {
				}
			})
		})
	}
}
