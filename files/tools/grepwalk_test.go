package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/files/local"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// jitterTree is the local provider with a random pause before each of
// its tree walk's listings and subdirectory opens (and a yield before
// some file opens), so that each run of a parallel walk does its work in
// another order.
type jitterTree struct {
	*local.Provider
	mu  sync.Mutex
	rnd *rand.Rand
}

func (p *jitterTree) pause() {
	p.mu.Lock()
	d := time.Duration(p.rnd.IntN(50)) * time.Microsecond
	p.mu.Unlock()
	time.Sleep(d)
}

func (p *jitterTree) OpenTree(ctx context.Context, t *scope.Target) (files.Info, files.WalkTree, error) {
	info, tree, err := p.Provider.OpenTree(ctx, t)
	if tree != nil {
		tree = &jitterDir{WalkTree: tree, p: p}
	}
	return info, tree, err
}

type jitterDir struct {
	files.WalkTree
	p *jitterTree
}

func (d *jitterDir) List(ctx context.Context, max int) ([]files.DirEntry, error) {
	d.p.pause()
	return d.WalkTree.List(ctx, max)
}

func (d *jitterDir) Sub(ctx context.Context, e files.DirEntry) (files.WalkTree, error) {
	d.p.pause()
	sub, err := d.WalkTree.Sub(ctx, e)
	if sub != nil {
		sub = &jitterDir{WalkTree: sub, p: d.p}
	}
	return sub, err
}

func (d *jitterDir) Open(base string) (files.File, error) {
	d.p.mu.Lock()
	yield := d.p.rnd.IntN(8) == 0
	d.p.mu.Unlock()
	if yield {
		runtime.Gosched()
	}
	return d.WalkTree.Open(base)
}

// namesOnly hides the local provider's tree walk: grep walks it by
// names (namedTree).
type namesOnly struct{ files.Provider }

// walkFixture writes a tree of 155 directories in three levels, named
// so that walk order (each directory's names in byte order, depth first)
// differs from the order of the paths ("a" < "a-b" < "a.b" < "a0", and
// "a/..." after "a-b"), with 0 to 40 files each (batches of one to two),
// *.skip files a .gitignore ignores and a .git directory; it returns the
// files grep must find, in walk order (each has two matching lines).
func walkFixture(t *testing.T) (root string, want []string) {
	root = testkit.TempDir(t)
	writeFile(t, filepath.Join(root, ".gitignore"), "*.skip\n")
	writeFile(t, filepath.Join(root, ".git", "HEAD"), "needle\n")
	names := []string{"a", "a-b", "a.b", "a0", "B"}
	n := 0
	var mk func(dir string, level int)
	mk = func(dir string, level int) {
		for _, name := range names {
			d := filepath.Join(dir, name)
			for i := range (n * 7) % 41 {
				writeFile(t, filepath.Join(d, fmt.Sprintf("f%02d.txt", i)), "needle one\nhay\nneedle two\n")
			}
			writeFile(t, filepath.Join(d, "x.skip"), "needle\n")
			n++
			if level < 3 {
				mk(d, level+1)
			}
		}
	}
	mk(root, 1)
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && e.Name() == ".git" {
			return filepath.SkipDir
		}
		if !e.IsDir() && strings.HasSuffix(p, ".txt") {
			rel, _ := filepath.Rel(root, p)
			want = append(want, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return root, want
}

// TestGrepParallelWalkIsDeterministic: over many runs, each with its
// work done in another order (random pauses in the tree walk), and by
// names, grep's result is the same and is the sequential walk's: the
// files in walk order, and every page of it the same entries.
func TestGrepParallelWalkIsDeterministic(t *testing.T) {
	root, want := walkFixture(t)
	var wantLines []string
	for _, f := range want {
		wantLines = append(wantLines, f+":1:needle one", f+":3:needle two")
	}
	providers := map[string]files.Provider{"local": local.New(), "by names": namesOnly{local.New()}}
	for i := range 4 {
		providers[fmt.Sprint("jitter ", i)] = &jitterTree{Provider: local.New(), rnd: rand.New(rand.NewPCG(uint64(i), 1))}
	}
	for name, p := range providers {
		s := newSession(t, newRuntime(t, &ToolOptions{Provider: p}), allEffects, root)
		got := pathsOf(mustCall(t, s, Grep, obj{"pattern": "needle", "output_mode": "files_with_matches", "head_limit": limits.GrepMaxHeadLimit}))
		if !slices.Equal(got, want) {
			t.Fatalf("%s: files %d, want %d:\n%q\nwant\n%q", name, len(got), len(want), got, want)
		}
		if name != "local" && name != "jitter 0" {
			continue
		}
		// content, paged: each page of 997 entries where the whole
		// result puts it (the .gitignore searched too)
		var lines []string
		for off := 0; ; off += 997 {
			var out GrepResult
			res := mustResult(t, s, Grep, obj{"pattern": "needle", "head_limit": 997, "offset": off})
			json.Unmarshal(res.Structured, &out)
			lines = append(lines, pathsOf(res.Text)...)
			if out.Total != len(wantLines) || out.FilesSearched != len(want)+1 {
				t.Fatalf("%s: %+v, want %d entries in %d files", name, out, len(wantLines), len(want)+1)
			}
			if out.NextOffset == 0 {
				break
			}
		}
		if !slices.Equal(lines, wantLines) {
			t.Fatalf("%s: the pages hold %d lines, want %d", name, len(lines), len(wantLines))
		}
	}
}

// TestGrepWalkStopsAtTheEntryBound: a tree of more than
// limits.WalkMaxFiles entries is searched up to that many entries in walk
// order (the search base first), exactly, and the result says it
// stopped; one entry fewer, and it does not.
func TestGrepWalkStopsAtTheEntryBound(t *testing.T) {
	if os.Getenv("CAPKIT_LONG_TESTS") == "" {
		t.Skip("writes 100,000 files; set CAPKIT_LONG_TESTS=1 (TestGrepWalkStopsMidWalk checks the same with a smaller bound)")
	}
	root := testkit.TempDir(t)
	// 1 + 40 directories + 40 × 2,499 files = limits.WalkMaxFiles + 1
	// entries with the last file.
	const dirs, per = 40, (limits.WalkMaxFiles - 40) / 40
	if 1+dirs+dirs*per != limits.WalkMaxFiles+1 {
		t.Fatal("fixture does not end one entry past the bound")
	}
	for d := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", d))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range per {
			data := ""
			if f == 0 || f == per-1 {
				data = "needle\n"
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", f)), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	check := func(stopped bool, files int) {
		t.Helper()
		var out GrepResult
		res := mustResult(t, s, Grep, obj{"pattern": "needle", "output_mode": "files_with_matches", "head_limit": limits.GrepMaxHeadLimit})
		json.Unmarshal(res.Structured, &out)
		got := pathsOf(res.Text)
		last := fmt.Sprintf("d%02d/f%04d", dirs-1, per-1)
		if out.Stopped != stopped || out.FilesSearched != files || slices.Contains(got, last) == stopped || len(got) != 2*dirs-boolInt(stopped) {
			t.Fatalf("stopped %v after %d files, %d found (the last: %v); want stopped %v after %d", out.Stopped, out.FilesSearched, len(got), slices.Contains(got, last), stopped, files)
		}
	}
	check(true, dirs*per-1)
	os.Remove(filepath.Join(root, "d00", "f0001")) // one entry fewer
	check(false, dirs*per-1)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestGrepBoundsMidWalk: the output bound and head_limit met while the
// walk is still listing cut the page where the sequential walk's result
// does, with the same next offset.
func TestGrepBoundsMidWalk(t *testing.T) {
	root, want := walkFixture(t)
	rt := newRuntimePolicies(t, &ToolOptions{Provider: &jitterTree{Provider: local.New(), rnd: rand.New(rand.NewPCG(7, 7))}},
		map[string]kernel.Policy{Grep: {MaxOutputBytes: 4 * limits.KiB}})
	s := newSession(t, rt, allEffects, root)
	for range 2 {
		var out GrepResult
		res := mustResult(t, s, Grep, obj{"pattern": "needle", "output_mode": "files_with_matches", "head_limit": limits.GrepMaxHeadLimit})
		json.Unmarshal(res.Structured, &out)
		got := pathsOf(res.Text)
		if out.Shown == 0 || out.Shown >= len(want) || !slices.Equal(got, want[:out.Shown]) || out.NextOffset != out.Shown || !strings.Contains(res.Text, "output bound") {
			t.Fatalf("%+v\n%q", out, got)
		}
		res = mustResult(t, s, Grep, obj{"pattern": "needle", "output_mode": "files_with_matches", "head_limit": 10, "offset": 250})
		if got := pathsOf(res.Text); !slices.Equal(got, want[250:260]) {
			t.Fatalf("page at 250: %q, want %q", got, want[250:260])
		}
	}
}

// TestGrepCancelledMidWalk: a grep cancelled while its workers are still
// listing directories fails with the cancellation, and closes every
// directory it opened, whenever it is cancelled.
func TestGrepCancelledMidWalk(t *testing.T) {
	root, _ := walkFixture(t)
	opened := 0
	for _, after := range []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 80 * time.Millisecond} {
		p := &heldCounting{Provider: local.New(), open: map[string]int{}, slowLists: true}
		opened = max(opened, cancelledGrep(t, p, root, after, `{"pattern": "needle"}`))
	}
	if opened == 0 {
		t.Fatal("no cancelled call opened a directory")
	}
}

// TestGrepWalkStopsMidWalk: with the entry bound anywhere in the tree (in
// a batch, at a directory, at the last entry), the walk stops after
// exactly that many entries in walk order, whatever order the work was
// done in: the files searched and found are those among the first
// entries, and the result says it stopped.
func TestGrepWalkStopsMidWalk(t *testing.T) {
	root, _ := walkFixture(t)
	var entries []string // in walk order, the search base first
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		entries = append(entries, filepath.ToSlash(rel))
		if e.IsDir() && e.Name() == ".git" {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planGrep(GrepArgs{Pattern: "needle", OutputMode: "files_with_matches", HeadLimit: limits.GrepMaxHeadLimit}, 0)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{1, 2, 3, 4, 10, 37, 38, 39, 500, 1001, 2000, 3333, len(entries) - 1, len(entries), len(entries) + 1} {
		var searched int
		var found []string
		for _, e := range entries[1:min(n, len(entries))] {
			switch info, _ := os.Stat(filepath.Join(root, e)); {
			case info.IsDir(), strings.HasSuffix(e, ".skip"):
			case strings.HasSuffix(e, ".txt"):
				searched++
				found = append(found, e)
			default:
				searched++ // the .gitignore
			}
		}
		p := &jitterTree{Provider: local.New(), rnd: rand.New(rand.NewPCG(rnd.Uint64(), 0))}
		g := newGrepRun(&executor{provider: p}, plan, rootTarget(t, root), nil)
		g.maxEntries = n
		if err := g.run(context.Background()); err != nil {
			t.Fatal(err)
		}
		pg := g.page()
		res := pg.result(pg.collected())
		if got := pathsOf(res.text); res.Stopped != (n < len(entries)) || res.FilesSearched != searched || !slices.Equal(got, found) {
			t.Fatalf("bound %d of %d entries: stopped %v, %d files searched, %d found; want %d and %d", n, len(entries), res.Stopped, res.FilesSearched, len(got), searched, len(found))
		}
	}
}

// TestGrepLetsCollectedResultsGo: once collected, a batch's results (its
// kept text) and a subdirectory's are no longer held by the walk, so what
// a call keeps stays within the window, not the whole tree's.
func TestGrepLetsCollectedResultsGo(t *testing.T) {
	root, _ := walkFixture(t)
	plan, err := planGrep(GrepArgs{Pattern: "needle"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	g := newGrepRun(&executor{provider: local.New()}, plan, rootTarget(t, root), nil)
	info, tree, err := g.openTree(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	top := &grepDir{name: info.Name, tree: tree}
	if err := g.walkTree(context.Background(), top); err != nil {
		t.Fatal(err)
	}
	if g.collected.res.FilesMatched == 0 || len(top.slots) == 0 {
		t.Fatalf("the fixture's walk found %d files in %d slots", g.collected.res.FilesMatched, len(top.slots))
	}
	for i, s := range top.slots {
		if s.dir != nil || s.batch != nil {
			t.Fatalf("slot %d of the search base still held after it was collected", i)
		}
	}
}
