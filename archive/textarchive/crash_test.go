package textarchive

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/internal/testkit/nettest"
	"github.com/capkit/capkit/net/budget"
)

// The crash tests re-run this test binary as a child that performs one
// operation on an archive and is killed (SIGKILL, by itself) at a named
// step of it: crashEnv names the operation, crashEnv_STEP the step and
// crashEnv_DIR the archive root (or the operation's other paths).
const crashEnv = "CAPKIT_TEXTARCHIVE_CRASH"

// crashOps are the operations a child can run, by name, each with its
// arguments from the environment.
var crashOps = map[string]func(ctx context.Context, env func(string) string) error{
	"add-text": func(ctx context.Context, env func(string) string) error {
		a, err := Open(ctx, env("DIR"))
		if err != nil {
			return err
		}
		defer a.Close()
		_, err = a.AddText(ctx, TextRequest{Collection: "c", Item: "item", Request: "crash", Document: doc("the second text", "of two parts")})
		return err
	},
	"add-file": func(ctx context.Context, env func(string) string) error {
		a, err := Open(ctx, env("DIR"))
		if err != nil {
			return err
		}
		defer a.Close()
		_, err = a.AddFile(ctx, FileRequest{Collection: "c", Item: "item", Request: "crash", Name: "f.bin", MediaType: "application/octet-stream"},
			strings.NewReader(strings.Repeat("file bytes ", 4096)))
		return err
	},
}

func init() {
	crashOps["fetch"] = func(ctx context.Context, env func(string) string) error {
		a, err := Open(ctx, env("DIR"))
		if err != nil {
			return err
		}
		defer a.Close()
		p, err := LoadSourcePolicy(ctx, env("POLICY"))
		if err != nil {
			return err
		}
		b, err := budget.Open(ctx, env("BUDGET"), p.Budget(), nil)
		if err != nil {
			return err
		}
		defer b.Close()
		src := &Source{Policy: p, Budget: b, Resolver: nettest.ResolverAt(env("DNS"))}
		_, err = a.Fetch(ctx, src, FetchRequest{URL: env("URL"), Collection: "c", Item: "page", Request: "crash", Task: "test"})
		return err
	}
}

// TestCrashChild is the child's body; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	op := os.Getenv(crashEnv)
	if op == "" {
		t.Skip("runs only as a child of the crash tests")
	}
	at := os.Getenv(crashEnv + "_STEP")
	stepHook = func(s string) {
		if s == at {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Minute)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := crashOps[op](ctx, func(k string) string { return os.Getenv(crashEnv + "_" + k) })
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	fmt.Println("done")
}

// crashAt runs op in a child killed at step and fails unless the kill
// came at that step.
func crashAt(t *testing.T, op, at string, env ...string) {
	t.Helper()
	env = append(env, crashEnv+"="+op, crashEnv+"_STEP="+at)
	c := testkit.StartChild(t, "TestCrashChild", env...)
	var said []string
	for out := bufio.NewScanner(c.Stdout); out.Scan(); {
		said = append(said, out.Text())
	}
	if killed, err := c.Wait(); !killed {
		t.Fatalf("%s at %s: the child was not killed there (%v): %q", op, at, err, said)
	}
}

// auditClean fails unless a full audit of the archive at dir finds no
// problem; it returns the report.
func auditClean(t *testing.T, dir string) *AuditReport {
	t.Helper()
	a, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	r, err := a.Audit(context.Background(), AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() {
		t.Fatalf("audit: %+v", r.Problems)
	}
	return r
}

func versionsOf(t *testing.T, dir, collection, item string) int64 {
	t.Helper()
	a := must(Open(context.Background(), dir))
	defer a.Close()
	return must(a.Versions(context.Background(), VersionsQuery{Collection: collection, Item: item})).Total
}

// TestCrashDuringAdd kills an add at each of its steps: the archive is as
// before the add (one version) or as after it (two), its audit is clean,
// and the add made again with the same request completes it exactly
// once.
func TestCrashDuringAdd(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	for _, c := range []struct {
		op    string
		steps []string
		after int // the first step after which the add is durable
	}{
		{"add-text", []string{"add.inserted", "add.committed"}, 1},
		{"add-file", []string{"stage.synced", "add.pending", "add.published", "add.inserted", "add.committed"}, 4},
	} {
		for i, at := range c.steps {
			t.Run(c.op+"/"+at, func(t *testing.T) {
				a := newArchive(t)
				dir := a.dir
				addText(t, a, "c", "item", "first", doc("the first text"))
				a.Close()
				crashAt(t, c.op, at, crashEnv+"_DIR="+dir)
				want := int64(1)
				if i >= c.after {
					want = 2
				}
				if got := versionsOf(t, dir, "c", "item"); got != want {
					t.Fatalf("%d versions after a crash at %s, want %d", got, at, want)
				}
				auditClean(t, dir)
				if err := crashOps[c.op](context.Background(), func(k string) string { return dir }); err != nil {
					t.Fatalf("the add made again: %v", err)
				}
				if got := versionsOf(t, dir, "c", "item"); got != 2 {
					t.Fatalf("%d versions after the add was made again", got)
				}
				auditClean(t, dir)
			})
		}
	}
}

// TestCrashDuringFetch kills a retained fetch at each of its steps: the
// archive is as before (no version) or after (one), its audit is clean,
// and the operation made again either returns the retained result without
// a GET (after the commit) or fetches again and discloses that the first
// GET may have reached the server.
func TestCrashDuringFetch(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	s := newSite(t)
	for _, c := range []struct {
		retention string
		steps     []string
	}{
		{RetainTextOnly, []string{"fetch.admitted", "fetch.fetched", "fetch.inserted", "fetch.committed"}},
		{RetainOriginal, []string{"fetch.fetched", "stage.synced", "fetch.pending", "fetch.published", "fetch.inserted", "fetch.committed"}},
	} {
		for _, at := range c.steps {
			t.Run(c.retention+"/"+at, func(t *testing.T) {
				a := newArchive(t)
				dir := a.dir
				a.Close()
				p, policyPath := s.policy(t, c.retention, "")
				budgetRoot := t.TempDir()
				gets := s.gets.Load()
				crashAt(t, "fetch", at, crashEnv+"_DIR="+dir, crashEnv+"_POLICY="+policyPath, crashEnv+"_BUDGET="+budgetRoot,
					crashEnv+"_DNS="+s.dns.Addr(), crashEnv+"_URL="+s.url("/page.html"))
				committed := at == "fetch.committed"
				if got := versionsIn(t, dir, "c"); got != map[bool]int64{false: 0, true: 1}[committed] {
					t.Fatalf("%d versions after a crash at %s", got, at)
				}
				auditClean(t, dir)
				b := must(budget.Open(context.Background(), budgetRoot, p.Budget(), nil))
				defer b.Close()
				a = must(Open(context.Background(), dir))
				defer a.Close()
				src := &Source{Policy: p, Budget: b, Resolver: s.dns.Resolver()}
				sent := s.gets.Load() - gets
				out := must(a.Fetch(context.Background(), src, FetchRequest{URL: s.url("/page.html"), Collection: "c", Item: "page", Request: "crash", Task: "test"}))
				switch {
				case committed && (!out.Repeated || out.Repeat != "" || s.gets.Load()-gets != sent):
					t.Fatalf("the repeat of a committed fetch: %+v, %d GETs", out, s.gets.Load()-gets)
				case !committed && (out.Repeated || out.Attempts != 2 || !strings.Contains(out.Repeat, "may have reached the server")):
					t.Fatalf("the repeat of an interrupted fetch: %+v", out)
				}
				if got := versionsIn(t, dir, "c"); got != 1 {
					t.Fatalf("%d versions after the fetch was made again", got)
				}
				auditClean(t, dir)
			})
		}
	}
}

func versionsIn(t *testing.T, dir, collection string) int64 {
	t.Helper()
	a := must(Open(context.Background(), dir))
	defer a.Close()
	l, err := a.List(context.Background(), ListQuery{Collection: collection})
	if fault.CodeOf(err) == fault.NotFound {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, it := range l.Items {
		n += it.Versions
	}
	return n
}
