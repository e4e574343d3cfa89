package tools

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// hostileGlob is a pattern a backtracking matcher takes exponential time
// on against a name of a×100.
var hostileGlob = strings.Repeat("{a,*}", 40) + "x"

// cpuTime is the CPU time this process has used.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// assertCPUStops fails unless the process is close to idle a second
// after a call returned. An abandoned handler that kept looping would use
// a core over the window, or on a machine loaded 10 times over its cores
// still a tenth of one: the bound is half that, well above an idle
// process's few milliseconds.
func assertCPUStops(t *testing.T, what string) {
	t.Helper()
	const grace, window = time.Second, 2 * time.Second
	time.Sleep(grace)
	before := cpuTime(t)
	time.Sleep(window)
	if used := cpuTime(t) - before; used > window/20 {
		t.Fatalf("%s: the process used %v of CPU in the %v after the call returned", what, used, window)
	}
}

// TestHostileGlobIsLinear: the pattern {a,*}×40 x against a×100, as glob
// and as grep's glob filter, answers (no match) instead of running until
// the deadline. A backtracking matcher took days.
func TestHostileGlobIsLinear(t *testing.T) {
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, strings.Repeat("a", 100)), "needle\n")
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	var out GlobResult
	res := mustResult(t, s, Glob, obj{"pattern": hostileGlob})
	jsonUnmarshal(t, res.Structured, &out)
	if out.Total != 0 {
		t.Fatalf("glob matched: %s", res.Text)
	}
	var gout GrepResult
	jsonUnmarshal(t, mustResult(t, s, Grep, obj{"pattern": "needle", "glob": hostileGlob}).Structured, &gout)
	if gout.Total != 0 || gout.FilesSearched != 0 {
		t.Fatalf("grep searched the file: %+v", gout)
	}
	// The same pattern ending in a matches: the compiled form is right.
	jsonUnmarshal(t, mustResult(t, s, Glob, obj{"pattern": strings.Repeat("{a,*}", 40) + "a"}).Structured, &out)
	if out.Total != 1 {
		t.Fatalf("glob did not match: %+v", out)
	}
}

// TestAbandonedCallsStopUsingCPU: for each tool that loops (glob's walk
// and match, grep's walk and search), a call abandoned at its deadline
// stops using CPU: every loop observes the call's context.
func TestAbandonedCallsStopUsingCPU(t *testing.T) {
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, strings.Repeat("a", 100)), "")
	for i := range 500 {
		writeFile(t, filepath.Join(root, "d", fmt.Sprintf("%04d", i), strings.Repeat("a", 100)), "")
	}
	// A text where a pattern without a literal keeps the regexp busy.
	big := strings.Repeat(strings.Repeat("word ", 15)+"\n", 100_000)
	writeFile(t, filepath.Join(root, "big.txt"), big)
	short := kernel.Policy{Timeout: 50 * time.Millisecond}
	rt := newRuntimePolicies(t, nil, map[string]kernel.Policy{Glob: short, Grep: short})
	s := newSession(t, rt, allEffects, root)
	calls := []struct {
		tool string
		args obj
	}{
		{Glob, obj{"pattern": hostileGlob}},
		{Glob, obj{"pattern": "**/" + hostileGlob}},
		{Grep, obj{"pattern": `(\w+\s+){4}\d`, "path": "big.txt"}},
		{Grep, obj{"pattern": `(\w+\s+){4}\d`, "glob": hostileGlob}},
		{Grep, obj{"pattern": "word", "-i": true, "-C": 3}},
	}
	for _, c := range calls {
		_, err := testkit.Call(t, s, c.tool, c.args)
		if err != nil && fault.CodeOf(err) != fault.Limit {
			t.Fatalf("%s %v: %v", c.tool, c.args, err)
		}
	}
	assertCPUStops(t, "glob and grep")
}

// peakHeap runs f and returns the largest heap in use sampled while it
// ran, above the heap in use before. The collector runs at a tenth of
// its usual growth meanwhile, so that the peak is the memory the call
// holds, not garbage the collector's pacing has let pile up (which
// varied from 12 to 71 MiB between runs of one grep).
func peakHeap(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var mu sync.Mutex
	peak := base
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapAlloc)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak - base
}

// TestGitignoreFloodIsBounded: 160 directories, each with a .gitignore
// of rules (just under limits.GitignoreMaxBytes in the attack; a quarter
// of it here, still six times the rules limits.GitignoreMaxRules allows,
// so the test takes seconds). One grep used to append
// every rule to one list (2 GB) and rebuild a matcher over all of them for
// each entry. Rules are now compiled once per directory, in force only
// below it and bounded in number; a file past the bound is reported.
func TestGitignoreFloodIsBounded(t *testing.T) {
	root := testkit.TempDir(t)
	var rules strings.Builder
	for i := 0; rules.Len() < limits.GitignoreMaxBytes/4-32; i++ {
		fmt.Fprintf(&rules, "*.x%06d\n", i)
	}
	const dirs = 160
	for i := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", i))
		writeFile(t, filepath.Join(dir, ".gitignore"), rules.String())
		writeFile(t, filepath.Join(dir, "f.txt"), "needle\n")
	}
	// Within the bound, rules are honoured and scoped to their directory.
	writeFile(t, filepath.Join(root, "small", ".gitignore"), "*.txt\n")
	writeFile(t, filepath.Join(root, "small", "f.txt"), "needle\n")
	writeFile(t, filepath.Join(root, "smallsibling", "f.txt"), "needle\n")
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	var res *kernel.Result
	peak := peakHeap(func() { res = mustResult(t, s, Grep, obj{"pattern": "needle"}) })
	var out GrepResult
	jsonUnmarshal(t, res.Structured, &out)
	if out.Total != dirs+1 || out.IgnoreSkipped != dirs || strings.Contains(res.Text, "small/f.txt") || !strings.Contains(res.Text, "smallsibling/f.txt") {
		t.Fatalf("%+v\n%.300s", out, res.Text)
	}
	if !strings.Contains(res.Text, fmt.Sprintf("%d .gitignore files or rules were not honoured", dirs)) {
		t.Fatalf("skip not reported:\n%s", res.Text[len(res.Text)-400:])
	}
	const bound = 64 * limits.MiB
	if peak > bound {
		t.Fatalf("peak heap grew by %d MiB during one grep, want at most %d MiB", peak/limits.MiB, bound/limits.MiB)
	}
	t.Logf("peak heap growth %.1f MiB", float64(peak)/limits.MiB)
}

func jsonUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}
