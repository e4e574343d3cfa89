package script

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Pathological scripts for the provenance analysis: each region
// analyzes what it holds, so regions nested around a large body cost
// their depth times its size. The analysis is bounded and observes its
// context; a long chain of functions is summarized in linear time.
func TestProvAnalysisBounded(t *testing.T) {
	f := newProvFixture(t, nil)
	// 200 branches around a list of 60,000 elements: about 12 million
	// analysis steps, past the bound. The run's time bound is generous:
	// under -race on a loaded machine the analysis is slow to get there.
	nested := nestedIfs(200, 60_000)
	_, err := Run(context.Background(), f.session(t), []byte(nested), &Options{Provenance: &Provenance{}, Timeout: limits.ScriptHardTimeout})
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "analysis steps") {
		t.Fatalf("nested regions over a large body: %v, want the analysis bound", err)
	}
	// Without labels the same script runs.
	if _, err := f.run(t, nested, provOff, nil); err != nil {
		t.Fatal(err)
	}
	// 3,000 functions, each calling the next, the last changing its
	// argument: each summary is made once or twice (made again for every
	// change anywhere, they took seconds).
	var chain strings.Builder
	chain.WriteString("g = []\n")
	const n = 3000
	for i := range n - 1 {
		fmt.Fprintf(&chain, "def f%d(l):\n  f%d(l)\n", i, i+1)
	}
	fmt.Fprintf(&chain, "def f%d(l):\n  l.append(1)\nf0(g)\nresult = len(g)\n", n-1)
	res, err := f.run(t, chain.String(), nil, nil)
	if err != nil || string(res.Value) != "1" {
		t.Fatalf("a chain of functions: %s, %v", res.Value, err)
	}
}

func TestProvAnalysisContextAndBound(t *testing.T) {
	src := nestedIfs(300, 1000)
	file, err := fileOptions.Parse("s.star", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := resolve.File(file, func(string) bool { return false }, starlark.Universe.Has); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	_, _, _, err = rewrite(ctx, file, limits.ScriptProvenanceAnalysisSteps)
	if fault.CodeOf(err) != fault.Unavailable {
		t.Fatalf("rewrite under a canceled context: %v (after %v), want unavailable", err, time.Since(start))
	}
	// About 300,000 steps: within the bound, past a bound of 100,000.
	if _, _, _, err = rewrite(context.Background(), file, limits.ScriptProvenanceAnalysisSteps); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err = rewrite(context.Background(), file, 100_000); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("rewrite past its bound: %v, want limit", err)
	}
}

// nestedIfs is depth branches, one inside the other, around a list of n
// elements.
func nestedIfs(depth, n int) string {
	var b strings.Builder
	b.WriteString("x = 1\nresult = 0\n")
	for i := range depth {
		b.WriteString(strings.Repeat(" ", i) + "if x:\n")
	}
	b.WriteString(strings.Repeat(" ", depth) + "result = [" + strings.Repeat("1,", n) + "]\n")
	return b.String()
}

// The tracker's traversals of values end once the run's context has:
// the interpreter checks it only between its steps, and one step may
// relabel a whole structure.
func TestProvTraversalsObserveContext(t *testing.T) {
	tr := newTracker([]region{{kind: "test"}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	tr.ctx = ctx
	elems := make([]starlark.Value, 5000)
	for i := range elems {
		elems[i] = starlark.NewList([]starlark.Value{starlark.MakeInt(i)})
	}
	big := starlark.NewList(elems)
	l := tr.ls.of(0)
	if err := tr.raiseDeep(big, l); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := tr.raiseDeep(big, l); err != errStopped {
		t.Fatalf("raiseDeep after the context ended: %v", err)
	}
	if _, _, err := tr.flat(big); err != errStopped {
		t.Fatalf("flat after the context ended: %v", err)
	}
	if _, err := tr.deep(big); err != errStopped {
		t.Fatalf("deep after the context ended: %v", err)
	}
}

// A container allocated at the address of a collected one neither
// inherits its label nor keeps it once labelled itself. The reuse is
// simulated: the old entry is moved to the new object's address.
func TestSideTableAddressReuse(t *testing.T) {
	ls := newLabels()
	var s sideTable
	old, reused := starlark.NewList(nil), starlark.NewList(nil)
	s.set(old, ls.of(1))
	e := s.m[addrOf(old)]
	delete(s.m, addrOf(old))
	s.m[addrOf(reused)] = e
	if l := s.get(reused); l != nil {
		t.Fatalf("the new object has the collected one's label %v", l.sources())
	}
	s.set(reused, ls.of(2))
	if l := s.get(reused); l != ls.of(2) {
		t.Fatalf("the new object's label: %v", l.sources())
	}
	runtime.KeepAlive(old)
}

// The side table keeps no collected container's entry for long: after
// labelled containers are collected, the sweep that the next sets bring
// leaves the live ones, each still labelled.
func TestSideTableSweeps(t *testing.T) {
	ls := newLabels()
	var s sideTable
	kept := make([]*starlark.List, 10)
	for i := range kept {
		kept[i] = starlark.NewList(nil)
		s.set(kept[i], ls.of(1))
	}
	for range 3 * sideTableMinSweep {
		s.set(starlark.NewList(nil), ls.of(2)) // garbage at once
	}
	runtime.GC()
	before := s.swept
	// New lists may take the collected ones' addresses (replacing their
	// entries) before the table grows to its next sweep.
	var alive []*starlark.List
	for range 8 * sideTableMinSweep {
		alive = append(alive, starlark.NewList(nil))
		if s.set(alive[len(alive)-1], ls.of(2)); s.swept != before {
			break
		}
	}
	// What the sweep kept is what is alive (the last garbage list may
	// still be in a register).
	if s.swept == before || s.swept > len(kept)+len(alive)+1 {
		t.Fatalf("after %d labelled containers were collected, the sweep kept %d entries for %d alive", 3*sideTableMinSweep, s.swept, len(kept)+len(alive))
	}
	runtime.KeepAlive(alive)
	for _, k := range kept {
		if s.get(k) != ls.of(1) {
			t.Fatal("a live container lost its label in a sweep")
		}
	}
}
