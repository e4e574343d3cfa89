package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

// The chaos soak drives the real `capkit serve`, over stdio and HTTP at
// once, with random calls of every tool (arguments drawn from hostile
// names and sizes at and past the bounds) from concurrent sessions, while
// another goroutine keeps changing the tree under the writable root
// (renames, symlink swaps in and out of the root, FIFOs, truncation,
// permission flips, deep nesting). After every call it checks what probe
// checks (an answer within the deadline; no marker from outside the roots,
// no host path, no system error text), and at intervals that the servers'
// memory stays under a bound derived from the configuration; at the end,
// that the outside tree and the read-only root are unchanged and that the
// audit log is well-formed and carries no argument text.
//
// 30 seconds by default; SOAK=10m (any duration) for a long run by hand.

// soakArg is in arguments, never in the audit log.
const soakArg = "SOAKARG_91f3"

// soakRSSBound is the most a server may hold: the HTTP body budget, a few
// largest messages being decoded, and a generous base.
const soakRSSBound = limits.MCPDefaultInFlightBytes + 4*limits.MCPMaxMessageBytes + 512*limits.MiB

type soakStats struct {
	calls, failures, protocol, steps atomic.Int64
}

func soakDuration(t *testing.T) time.Duration {
	d := 30 * time.Second
	if v := os.Getenv("SOAK"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			t.Fatalf("SOAK=%q: want a duration such as 10m", v)
		}
	}
	if testing.Short() {
		d = 3 * time.Second
	}
	return d
}

func TestSoak(t *testing.T) {
	w := newWorld(t)
	cfg := w.config(t, "")
	guarded := []string{w.outside, w.ro, filepath.Join(w.dir, "ro_evil"), filepath.Join(w.dir, "cat")}
	before := map[string]string{}
	for _, d := range guarded {
		before[d] = testkit.TreeDigest(t, d)
	}
	deadline := time.Now().Add(soakDuration(t))

	stdioCmd := exec.Command(capkit, "serve", "--config", cfg)
	stdioCmd.Stderr = &testWriter{t: t}
	stdio := connect(t, &mcp.CommandTransport{Command: stdioCmd, TerminateDuration: 5 * time.Second})
	url, httpCmd := httpServer(t, "--config", cfg)
	var sessions []*mcp.ClientSession
	sessions = append(sessions, stdio.cs)
	for range 2 {
		sessions = append(sessions, connect(t, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}).cs)
	}

	var st soakStats
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() { mutate(t, w, stop, &st) })
	var callers sync.WaitGroup
	for i, cs := range sessions {
		tools := activateAll(t, cs)
		callers.Go(func() { soakCalls(t, w, cs, tools, int64(i), deadline, &st) })
	}
	wg.Go(func() { watchMemory(t, stop, stdioCmd, httpCmd) })
	callers.Wait()
	close(stop)
	wg.Wait()

	for _, cs := range sessions {
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			t.Errorf("a server stopped answering: %v", err)
		}
	}
	for _, d := range guarded {
		if testkit.TreeDigest(t, d) != before[d] {
			t.Errorf("%s changed during the soak", d)
		}
	}
	checkAudit(t, w)
	if b, err := os.ReadFile(w.audit); err == nil && strings.Contains(string(b), soakArg) {
		t.Error("the audit log carries argument text")
	}
	t.Logf("soak: %d steps of the tree, %d calls (%d typed failures, %d protocol errors) over %d sessions",
		st.steps.Load(), st.calls.Load(), st.failures.Load(), st.protocol.Load(), len(sessions))
}

// activateAll finds every deferred tool with tool_search and returns the
// session's whole list.
func activateAll(t testing.TB, cs *mcp.ClientSession) []*mcp.Tool {
	t.Helper()
	for _, q := range []string{"move", "json", "csv", "html", "feed", "sniff", "digest", "copy", "tree", "state", "zip", "journal", "script", "catalog", "notes", "text", "file", "directory", "info"} {
		probeTool(cs, "tool_search", map[string]any{"query": q, "limit": limits.SearchMaxResults})
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

func probeTool(cs *mcp.ClientSession, name string, args map[string]any) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

func soakCalls(t *testing.T, w *world, cs *mcp.ClientSession, tools []*mcp.Tool, seed int64, deadline time.Time, st *soakStats) {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(time.Now().UnixNano())))
	vocab := soakVocabulary(w)
	for time.Now().Before(deadline) && !t.Failed() {
		tool := tools[rng.IntN(len(tools))]
		args := soakArgs(rng, tool.InputSchema, vocab)
		// Anything in the vocabulary may have been written into a file
		// by an earlier call, and read back now: it is the caller's own.
		o := probeOwn(t, cs, w, tool.Name, args, ownStrings(args, vocab), true)
		st.calls.Add(1)
		switch o.code {
		case "":
		case "protocol":
			st.protocol.Add(1)
		default:
			st.failures.Add(1)
		}
	}
}

// ownStrings are the strings a soak caller may see echoed: the whole
// vocabulary, and two of its arguments joined as a path, as written and
// cleaned (a tool may name a path argument joined with a pattern).
func ownStrings(args map[string]any, vocab []string) []string {
	strs := argStrings(args)
	own := slices.Clone(vocab)
	for _, a := range strs {
		for _, b := range strs {
			own = append(own, a+"/"+b, filepath.Join(a, b))
		}
	}
	return own
}

// soakVocabulary is what string arguments are drawn from: ordinary names,
// every hostile path, patterns that are costly to match, sizes past the
// bounds, and the audit canary.
func soakVocabulary(w *world) []string {
	v := []string{"notes.txt", "data.json", "data.csv", "page.html", "feed.xml", "sub", "sub/inner.txt", "new.txt",
		"good.zip", "jdir", "out", ".", "*", "**/*", "**/*.txt", "{a,*}", strings.Repeat("{a,*}", 40) + "x",
		"(a+)+$", "[", ".*", "(?i)one", strings.Repeat("a", 100), soakArg, soakArg + "/x", "\x00", "é/ü", strings.Repeat("a", 300),
		strings.Repeat("x", 70_000), strings.Repeat("line\n", 20_000), "https://example.org/feed", "a"}
	return append(v, w.hostilePaths()...)
}

// soakArgs draws arguments for a tool's input schema: every required
// property and a random part of the others, of the schema's type.
func soakArgs(rng *rand.Rand, schema any, vocab []string) map[string]any {
	s, _ := schema.(map[string]any)
	props, _ := s["properties"].(map[string]any)
	required, _ := s["required"].([]any)
	args := map[string]any{}
	for name, p := range props {
		if !slices.Contains(required, any(name)) && rng.IntN(2) == 0 {
			continue
		}
		args[name] = soakValue(rng, p, vocab, 0)
	}
	return args
}

func soakValue(rng *rand.Rand, schema any, vocab []string, depth int) any {
	s, _ := schema.(map[string]any)
	typ, _ := s["type"].(string)
	if types, ok := s["type"].([]any); ok && len(types) > 0 {
		typ, _ = types[rng.IntN(len(types))].(string)
	}
	switch typ {
	case "integer", "number":
		return []int64{0, 1, -1, 2, 3, 50, 1000, 1 << 31, 1<<53 - 1}[rng.IntN(9)]
	case "boolean":
		return rng.IntN(2) == 0
	case "array":
		var out []any
		for range rng.IntN(4) {
			if depth < 3 {
				out = append(out, soakValue(rng, s["items"], vocab, depth+1))
			}
		}
		return out
	case "object":
		if depth >= 3 {
			return map[string]any{}
		}
		return soakArgs(rng, s, vocab)
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 && rng.IntN(4) != 0 {
		return enum[rng.IntN(len(enum))]
	}
	return vocab[rng.IntN(len(vocab))]
}

// mutate keeps changing the writable root until stop: never touching
// anything outside it.
func mutate(t *testing.T, w *world, stop <-chan struct{}, st *soakStats) {
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	p := func(name string) string { return filepath.Join(w.rw, name) }
	steps := []func(){
		func() { os.Rename(p("notes.txt"), p("notes.moved")); os.Rename(p("notes.moved"), p("notes.txt")) },
		func() { os.Remove(p("swap")); os.Symlink(w.outside, p("swap")) },
		func() { os.Remove(p("swap")); os.MkdirAll(p("swap"), 0o755) },
		func() { os.Remove(p("swapfile")); os.Symlink(filepath.Join(w.outside, "secret.md"), p("swapfile")) },
		func() { os.Remove(p("swapfile")); os.WriteFile(p("swapfile"), []byte("in the root\n"), 0o644) },
		func() { os.Remove(p("soakfifo")); syscall.Mkfifo(p("soakfifo"), 0o644) },
		func() {
			os.WriteFile(p("trunc.txt"), []byte(strings.Repeat("t\n", 1000)), 0o644)
			os.Truncate(p("trunc.txt"), 3)
		},
		func() { os.Chmod(p("sub"), 0); os.Chmod(p("sub"), 0o755) },
		func() { os.Chmod(p("data.json"), 0); os.Chmod(p("data.json"), 0o644) },
		func() { os.MkdirAll(p(strings.Repeat("d/", 40)), 0o755) },
		func() { os.RemoveAll(p("d")) },
		func() { os.WriteFile(p("n"+strconv.Itoa(rng.IntN(50))+".txt"), []byte(soakArg+"\n"), 0o644) },
	}
	for {
		select {
		case <-stop:
			os.Chmod(p("sub"), 0o755)
			os.Chmod(p("data.json"), 0o644)
			return
		default:
		}
		steps[rng.IntN(len(steps))]()
		st.steps.Add(1)
		time.Sleep(time.Millisecond)
	}
}

// watchMemory fails the test when a server's resident memory passes
// soakRSSBound.
func watchMemory(t *testing.T, stop <-chan struct{}, cmds ...*exec.Cmd) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for _, c := range cmds {
			if c.Process == nil {
				continue
			}
			if rss := residentBytes(c.Process.Pid); rss > soakRSSBound {
				t.Errorf("server %d holds %d bytes, over the bound of %d", c.Process.Pid, rss, int64(soakRSSBound))
			}
		}
	}
}

// residentBytes is a process's VmRSS, or 0 when it cannot be read.
func residentBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * limits.KiB
		}
	}
	return 0
}

// FuzzSoak drives one random call per input against one server (started
// once per fuzzing process), with the same checks as the soak.
func FuzzSoak(f *testing.F) {
	f.Add(uint16(0), uint64(1))
	f.Add(uint16(7), uint64(42))
	f.Add(uint16(23), uint64(1<<40))
	w := newWorld(f)
	cmd := exec.Command(capkit, "serve", "--config", w.config(f, ""))
	cs := connect(f, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}).cs
	tools := activateAll(f, cs)
	f.Fuzz(func(t *testing.T, pick uint16, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, uint64(pick)))
		tool := tools[int(pick)%len(tools)]
		vocab := soakVocabulary(w)
		args := soakArgs(rng, tool.InputSchema, vocab)
		probeOwn(t, cs, w, tool.Name, args, ownStrings(args, vocab), true)
	})
}
