package budget

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
)

const childEnv = "CAPKIT_BUDGET_CHILD"

func policy(requests, bytes int64) *Policy {
	return &Policy{Format: 1, Group: "upstream", WindowSeconds: 3600, WindowRequests: requests, WindowBytes: bytes}
}

// fakeClock is a clock a test moves: wall and boot separately.
type fakeClock struct {
	mu sync.Mutex
	in Instant
}

func newFakeClock() *fakeClock {
	return &fakeClock{in: Instant{Wall: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), BootID: "boot-1", Boot: time.Hour}}
}

func (c *fakeClock) now() Instant { c.mu.Lock(); defer c.mu.Unlock(); return c.in }
func (c *fakeClock) advance(wall, boot time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.in.Wall = c.in.Wall.Add(wall)
	c.in.Boot += boot
}
func (c *fakeClock) reboot(id string, wall time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.in.Wall, c.in.BootID, c.in.Boot = c.in.Wall.Add(wall), id, time.Second
}

func open(t *testing.T, locator string, p *Policy, c *fakeClock) *Budget {
	t.Helper()
	var opts *Options
	if c != nil {
		opts = &Options{Clock: c.now}
	}
	b, err := Open(context.Background(), locator, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func wantCode(t *testing.T, err error, code fault.Code, parts ...string) *fault.Error {
	t.Helper()
	if fault.CodeOf(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%q does not mention %q", err, p)
		}
	}
	return fault.As(err)
}

func TestReserveSettleWindow(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		c := newFakeClock()
		p := policy(3, 1000)
		p.TaskRequests = 2
		b := open(t, loc, p, c)
		r1, err := b.Reserve(ctx, "a", 400)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Reserve(ctx, "a", 400); err != nil {
			t.Fatal(err)
		}
		wantCode(t, must(b.Reserve(ctx, "a", 1)), fault.Deferred, `task "a" has used its 2 requests`)
		e := wantCode(t, must(b.Reserve(ctx, "b", 201)), fault.Deferred, "200 of its 1000 bytes left")
		if e.RetryAfter != time.Hour {
			t.Fatalf("retry after %v, want the window's end", e.RetryAfter)
		}
		// Settling returns the unused bytes to the window, never more.
		wantCode(t, b.Settle(ctx, r1.ID, 401, Outcome{}), fault.InvalidInput, "charge stays")
		if err := b.Settle(ctx, r1.ID, 100, Outcome{Status: 200}); err != nil {
			t.Fatal(err)
		}
		wantCode(t, b.Settle(ctx, r1.ID, 100, Outcome{}), fault.NotFound, "not open")
		if _, err := b.Reserve(ctx, "b", 500); err != nil {
			t.Fatal(err)
		}
		wantCode(t, must(b.Reserve(ctx, "c", 1)), fault.Deferred, "used its 3 requests")
		wantCode(t, must(b.Reserve(ctx, "c", 1001)), fault.Limit, "can never fit")
		st, err := b.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.WindowRequests != 3 || st.WindowBytes != 1000 || st.TotalBytes != 1000 || len(st.Open) != 2 || len(st.Tasks) != 2 {
			t.Fatalf("status %+v", st)
		}
		// A new window starts when the old one has ended on both clocks.
		c.advance(time.Hour, time.Hour)
		if _, err := b.Reserve(ctx, "c", 1000); err != nil {
			t.Fatal(err)
		}
		st, _ = b.Status(ctx)
		if st.WindowSeq != 2 || st.WindowBytes != 1000 || st.TotalRequests != 4 || st.TotalBytes != 2000 {
			t.Fatalf("after rollover %+v", st)
		}
	})
}

func must[T any](_ T, err error) error { return err }

func TestCooldownSurvivesRestartAndClockJumps(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		c := newFakeClock()
		p := policy(100, 1<<20)
		p.MinIntervalSeconds = 10
		b := open(t, loc, p, c)
		r, err := b.Reserve(ctx, "a", 10)
		if err != nil {
			t.Fatal(err)
		}
		e := wantCode(t, must(b.Reserve(ctx, "a", 10)), fault.Deferred, "every 10s")
		if e.RetryAfter != 10*time.Second {
			t.Fatalf("spacing retry %v", e.RetryAfter)
		}
		if err := b.Settle(ctx, r.ID, 10, Outcome{Status: 429, RetryAfter: "3600"}); err != nil {
			t.Fatal(err)
		}
		b.Close()
		// Restart, and the wall clock jumps two hours ahead: the boot clock
		// says one minute passed, so the cooldown holds.
		c.advance(2*time.Hour, time.Minute)
		b = open(t, loc, p, c)
		e = wantCode(t, must(b.Reserve(ctx, "a", 10)), fault.Deferred, "cooling down", "429")
		if e.RetryAfter != 59*time.Minute {
			t.Fatalf("retry after %v, want 59m", e.RetryAfter)
		}
		// A backward jump cannot shorten it either.
		c.advance(-24*time.Hour, time.Minute)
		wantCode(t, must(b.Reserve(ctx, "a", 10)), fault.Deferred, "cooling down")
		// A shorter Retry-After never shortens a cooldown.
		c.advance(24*time.Hour, 0)
		st, _ := b.Status(ctx)
		if st.CooldownRemainingSec != (58 * time.Minute).Seconds() {
			t.Fatalf("cooldown %v", st.CooldownRemainingSec)
		}
		// After a reboot the boot clock no longer applies: the wall decides.
		// (the wall clock is set right again: 30 minutes after the refusal).
		c.reboot("boot-2", -90*time.Minute)
		wantCode(t, must(b.Reserve(ctx, "a", 10)), fault.Deferred, "cooling down")
		c.advance(30*time.Minute, 0)
		if _, err := b.Reserve(ctx, "a", 10); err != nil {
			t.Fatalf("after the cooldown: %v", err)
		}
	})
}

func TestUnknownCooldownWaitsForOperator(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		c := newFakeClock()
		b := open(t, loc, policy(100, 1<<20), c)
		for _, o := range []Outcome{{Status: 503}, {Status: 503, RetryAfter: "soon"}, {Status: 404}} {
			r, _ := b.Reserve(ctx, "a", 1)
			b.Settle(ctx, r.ID, 1, o)
		}
		if _, err := b.Reserve(ctx, "a", 1); err != nil {
			t.Fatalf("503 without Retry-After is no cooldown: %v", err)
		}
		r, _ := b.Reserve(ctx, "a", 1)
		b.Settle(ctx, r.ID, 1, Outcome{Status: 429})
		c.advance(400*24*time.Hour, 400*24*time.Hour) // past any window: a rollover does not clear it
		wantCode(t, must(b.Reserve(ctx, "a", 1)), fault.Deferred, "operator")
		st, _ := b.Status(ctx)
		if !st.CooldownOperator || !strings.Contains(st.Text(), "BLOCKED") {
			t.Fatalf("status %s", st.Text())
		}
		if err := b.ClearCooldown(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Reserve(ctx, "a", 1); err != nil {
			t.Fatal(err)
		}
		r, _ = b.Reserve(ctx, "a", 1)
		b.Settle(ctx, r.ID, 1, Outcome{Status: 503, RetryAfter: strconv.Itoa(8 * 24 * 3600)})
		wantCode(t, must(b.Reserve(ctx, "a", 1)), fault.Deferred, "operator")
	})
}

func TestPolicyChangeKeepsCharges(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		b := open(t, loc, policy(5, 1000), nil)
		for range 4 {
			if _, err := b.Reserve(ctx, "a", 100); err != nil {
				t.Fatal(err)
			}
		}
		b.Close()
		b = open(t, loc, policy(4, 1000), nil)
		wantCode(t, must(b.Reserve(ctx, "a", 1)), fault.Deferred, "used its 4 requests")
		other := policy(10, 1000)
		other.Group = "other"
		_, err := Open(ctx, loc, other, nil)
		wantCode(t, err, fault.Conflict, `holds group "upstream"`)
		b2, err := OpenExisting(ctx, loc, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer b2.Close()
		if b2.Policy().WindowRequests != 4 {
			t.Fatalf("recorded policy %+v", b2.Policy())
		}
	})
	_, err := OpenExisting(context.Background(), t.TempDir(), nil)
	wantCode(t, err, fault.NotFound, "holds no budget")
}

// Conservation: many goroutines and several processes reserve at once; the
// admitted count is exactly the allowance. On PostgreSQL every process
// first takes a lease (all hold one at once before they go on), and the
// same runs again without leases.
func TestConservationAcrossGoroutinesAndProcesses(t *testing.T) {
	const allowance, procs, perProc, goroutines = 37, 3, 40, 8
	for _, noLease := range []bool{false, true} {
		t.Run(map[bool]string{false: "leases", true: "no-lease"}[noLease], func(t *testing.T) {
			eachStore(t, func(t *testing.T, loc string) {
				if noLease && !IsPostgres(loc) {
					t.Skip("SQLite admits without leases anyway")
				}
				conserve(t, loc, noLease, allowance, procs, perProc, goroutines)
			})
		})
	}
}

func conserve(t *testing.T, loc string, noLease bool, allowance int64, procs, perProc, goroutines int) {
	b, err := Open(context.Background(), loc, policy(allowance, 1<<40), &Options{NoLease: noLease})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	barrier := filepath.Join(t.TempDir(), "go")
	var admitted atomic.Int64
	children := make([]*testkit.Child, procs)
	lines := make([]*bufio.Scanner, procs)
	for i := range children {
		children[i] = testkit.StartChild(t, "TestChildReserve", childEnv+"="+loc, "CAPKIT_BUDGET_N="+strconv.Itoa(perProc),
			"CAPKIT_BUDGET_GO="+barrier, "CAPKIT_BUDGET_NOLEASE="+strconv.FormatBool(noLease))
		lines[i] = bufio.NewScanner(children[i].Stdout)
	}
	for i := range children {
		if !lines[i].Scan() || lines[i].Text() != "first" {
			t.Fatalf("child %d: %q", i, lines[i].Text())
		}
	}
	// Every child has made its first admission; with leases each holds
	// one now, a slice of what was left when it came.
	st, err := b.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantLeases := int64(0)
	if IsPostgres(loc) && !noLease {
		wantLeases = int64(procs)
	}
	if st.Leases != wantLeases || st.WindowRequests != int64(procs) {
		t.Fatalf("after the first admissions: %d leases (want %d), %d requests", st.Leases, wantLeases, st.WindowRequests)
	}
	if err := os.WriteFile(barrier, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range 10 {
				if _, err := b.Reserve(context.Background(), fmt.Sprintf("g%d", g), 1); err == nil {
					admitted.Add(1)
				} else if fault.CodeOf(err) != fault.Deferred {
					t.Error(err)
				}
			}
		})
	}
	var leased int
	for i, c := range children {
		for lines[i].Scan() {
			var k, l int
			if _, err := fmt.Sscanf(lines[i].Text(), "admitted %d leased %d", &k, &l); err == nil {
				admitted.Add(int64(k))
				leased += l
			}
		}
		if _, err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	st, err = b.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if admitted.Load() != allowance || st.WindowRequests != allowance || st.TotalRequests != allowance || st.WindowRequests+st.LeasedRequests > allowance {
		t.Fatalf("admitted %d, status %d (+%d leased), want exactly %d", admitted.Load(), st.WindowRequests, st.LeasedRequests, allowance)
	}
	if noLease && leased != 0 {
		t.Fatalf("%d admissions under leases with NoLease", leased)
	}
	t.Logf("children admitted %d under leases", leased)
}

// TestChildReserve is the body of a child process: reserve once, say so,
// wait for the barrier file, reserve N-1 times more and print how many
// were admitted, and how many of those under a lease.
func TestChildReserve(t *testing.T) {
	loc := os.Getenv(childEnv)
	if loc == "" {
		t.Skip("child process body")
	}
	n, _ := strconv.Atoi(os.Getenv("CAPKIT_BUDGET_N"))
	noLease, _ := strconv.ParseBool(os.Getenv("CAPKIT_BUDGET_NOLEASE"))
	b, err := OpenExisting(context.Background(), loc, &Options{NoLease: noLease})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	task := fmt.Sprintf("p%d", os.Getpid())
	admitted, leased := 0, 0
	for i := range n {
		r, err := b.Reserve(context.Background(), task, 1)
		switch {
		case err == nil:
			admitted++
			if underLease(b, r.ID) {
				leased++
			}
		case !errors.Is(err, fault.ErrDeferred):
			t.Fatal(err)
		}
		if i == 0 {
			fmt.Println("first")
			awaitFile(t, os.Getenv("CAPKIT_BUDGET_GO"))
		}
	}
	fmt.Printf("admitted %d leased %d\n", admitted, leased)
}

// underLease reports whether this Budget admitted reservation id under a
// lease.
func underLease(b *Budget, id string) bool {
	b.s.q.mu.Lock()
	defer b.s.q.mu.Unlock()
	tr := b.s.q.open[id]
	return tr != nil && tr.l != nil
}

// awaitFile waits for a file the parent creates; the deadline only guards
// against a hang.
func awaitFile(t *testing.T, path string) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("no %s within a minute", path)
}

// SIGKILL between reserve and settle leaves the bytes charged.
func TestKillBetweenReserveAndSettle(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		b := open(t, loc, policy(10, 1000), nil)
		id := killChargedChild(t, b, loc, "TestChildReserveAndHang", "reserved")
		wantCode(t, must(b.Reserve(context.Background(), "x", 401)), fault.Deferred, "400 of its 1000")
		// An operator settles it once the outcome is known.
		if err := b.Settle(context.Background(), id, 600, Outcome{}); err != nil {
			t.Fatal(err)
		}
	})
}

// killChargedChild runs the child test, which prints "<what> ID" once it
// reserved 600 bytes as "victim" and then hangs; it SIGKILLs the child and
// checks that the reservation ID stays open, charged in full. It returns
// ID.
func killChargedChild(t *testing.T, b *Budget, loc, child, what string) string {
	t.Helper()
	c := testkit.StartChild(t, child, childEnv+"="+loc)
	sc := bufio.NewScanner(c.Stdout)
	var id string
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), what+" "); ok {
			id = v
			break
		}
	}
	c.Kill(t)
	if killed, _ := c.Wait(); !killed || id == "" {
		t.Fatalf("child not killed after it %s (id %q)", what, id)
	}
	st, err := b.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.WindowBytes != 600 || len(st.Open) != 1 || st.Open[0].ID != id || st.Open[0].Bytes != 600 {
		t.Fatalf("after SIGKILL: %+v", st)
	}
	return id
}

func TestChildReserveAndHang(t *testing.T) {
	loc := os.Getenv(childEnv)
	if loc == "" {
		t.Skip("child process body")
	}
	b, err := OpenExisting(context.Background(), loc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Reserve(context.Background(), "victim", 600)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("reserved %s\n", r.ID)
	time.Sleep(time.Minute) // killed long before
}

func TestReserveUpToTakesWhatIsLeft(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		p := policy(10, 1000)
		p.TaskBytes = 600
		b := open(t, loc, p, nil)
		r, err := b.ReserveUpTo(ctx, "a", 5000)
		if err != nil || r.Bytes != 600 {
			t.Fatalf("first: %+v %v", r, err)
		}
		r, err = b.ReserveUpTo(ctx, "b", 5000)
		if err != nil || r.Bytes != 400 {
			t.Fatalf("group remainder: %+v %v", r, err)
		}
		wantCode(t, must(b.ReserveUpTo(ctx, "c", 5000)), fault.Deferred, "0 of its 1000 bytes left")
		wantCode(t, must(b.ReserveUpTo(ctx, "c", 0)), fault.InvalidInput, "up to 0")
	})
}

// A forward wall-clock jump does not end a window early: the boot clock
// still says it runs.
func TestWindowSurvivesWallClockJump(t *testing.T) {
	eachStore(t, func(t *testing.T, loc string) {
		ctx := context.Background()
		c := newFakeClock()
		b := open(t, loc, policy(1, 100), c)
		if _, err := b.Reserve(ctx, "a", 1); err != nil {
			t.Fatal(err)
		}
		c.advance(48*time.Hour, time.Minute)
		e := wantCode(t, must(b.Reserve(ctx, "a", 1)), fault.Deferred, "used its 1 requests")
		if e.RetryAfter != 59*time.Minute {
			t.Fatalf("retry after %v, want the rest of the window on the boot clock", e.RetryAfter)
		}
		c.advance(0, 59*time.Minute)
		if _, err := b.Reserve(ctx, "a", 1); err != nil {
			t.Fatalf("next window: %v", err)
		}
	})
}
