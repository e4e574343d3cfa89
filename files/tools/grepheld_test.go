package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/files/local"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
)

// heldCounting is the local provider with its tree walk's open
// directories counted: how many are open at once, at most.
type heldCounting struct {
	*local.Provider
	mu        sync.Mutex
	open      map[string]int
	most      int
	slowOpens bool
	slowLists bool
}

func (p *heldCounting) OpenTree(ctx context.Context, t *scope.Target) (files.Info, files.WalkTree, error) {
	info, tree, err := p.Provider.OpenTree(ctx, t)
	if tree != nil {
		tree = p.opened(info.Name, tree)
	}
	return info, tree, err
}

func (p *heldCounting) opened(name string, tree files.WalkTree) files.WalkTree {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open[name]++
	p.most = max(p.most, len(p.open))
	return &countedTree{WalkTree: tree, p: p, name: name}
}

type countedTree struct {
	files.WalkTree
	p    *heldCounting
	name string
}

func (d *countedTree) Sub(ctx context.Context, e files.DirEntry) (files.WalkTree, error) {
	sub, err := d.WalkTree.Sub(ctx, e)
	if sub != nil {
		sub = d.p.opened(e.Name, sub)
	}
	return sub, err
}

func (d *countedTree) Close() {
	p := d.p
	p.mu.Lock()
	if p.open[d.name]--; p.open[d.name] == 0 {
		delete(p.open, d.name)
	}
	p.mu.Unlock()
	d.WalkTree.Close()
}

func (d *countedTree) List(ctx context.Context, max int) ([]files.DirEntry, error) {
	if d.p.slowLists {
		time.Sleep(time.Millisecond) // the collector waits on the listings
	}
	return d.WalkTree.List(ctx, max)
}

func (d *countedTree) Open(base string) (files.File, error) {
	if d.p.slowOpens && base != ".gitignore" {
		time.Sleep(time.Millisecond) // the listings run ahead of the searches
	}
	return d.WalkTree.Open(base)
}

// TestGrepHoldsFewDirectories: however slow the searches, the
// directories the walk holds open stay within those above the collector
// and the window of tasks taken, not one per directory listed.
func TestGrepHoldsFewDirectories(t *testing.T) {
	root := t.TempDir()
	const dirs = 400
	for i := range dirs {
		writeFile(t, filepath.Join(root, fmt.Sprintf("d%03d", i), "f.txt"), "match\n")
	}
	p := &heldCounting{Provider: local.New(), open: map[string]int{}, slowOpens: true}
	s := newSession(t, newRuntime(t, &ToolOptions{Provider: p}), allEffects, root)
	res := mustResult(t, s, Grep, obj{"pattern": "match", "output_mode": "count"})
	if want := fmt.Sprintf("(%d files with matches)", dirs); !strings.Contains(res.Text, want) {
		t.Fatalf("%s, want %s", res.Text, want)
	}
	// the root and the directory collected, the windows and the task
	// taken past them
	if bound := 2 + 2*grepWindow() + 1; p.most > bound || p.most == 0 {
		t.Fatalf("%d directories held at once, want 1 to %d", p.most, bound)
	}
}

// TestGrepReleasesHoldsWhenCancelled: a grep abandoned while its walk
// runs ahead of slow workers releases every directory it held, whenever
// it is cancelled.
func TestGrepReleasesHoldsWhenCancelled(t *testing.T) {
	root := t.TempDir()
	for i := range 300 {
		writeFile(t, filepath.Join(root, fmt.Sprintf("d%03d", i), "f.txt"), "match\n")
	}
	held := 0 // the most directories any of the cancelled calls held
	for _, after := range []time.Duration{2 * time.Millisecond, 10 * time.Millisecond, 40 * time.Millisecond, 160 * time.Millisecond} {
		p := &heldCounting{Provider: local.New(), open: map[string]int{}, slowOpens: true}
		held = max(held, cancelledGrep(t, p, root, after, `{"pattern": "match", "output_mode": "count"}`))
	}
	if held == 0 {
		t.Fatal("no cancelled call held a directory: the test saw no hold to release")
	}
}

// cancelledGrep calls grep with args on root through p, cancelled after
// after, and waits until p holds no directory: the call returns at its
// deadline, and its workers release what they held as they stop. It
// fails the test when the call succeeds or a directory stays held, and
// returns the most p held at once.
func cancelledGrep(t *testing.T, p *heldCounting, root string, after time.Duration, args string) int {
	t.Helper()
	s := newSession(t, newRuntime(t, &ToolOptions{Provider: p}), allEffects, root)
	ctx, cancel := context.WithTimeout(context.Background(), after)
	_, err := s.Call(ctx, Grep, json.RawMessage(args))
	cancel()
	if err == nil {
		t.Fatalf("cancelled after %v: grep %s succeeded", after, args)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		p.mu.Lock()
		left, most := len(p.open), p.most
		p.mu.Unlock()
		if left == 0 {
			return most
		}
		if time.Now().After(deadline) {
			t.Fatalf("cancelled after %v: %d directories still held (%d at most)", after, left, most)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGrepBatchKeepsBounded: a batch keeps at most limits.GrepKeepBytes
// of text and the one entry that passes it, however many of its files
// match with large entries (the rest is searched again when a page
// needs it).
func TestGrepBatchKeepsBounded(t *testing.T) {
	root := t.TempDir()
	line := strings.Repeat("y", limits.GrepMaxLineRunes)
	entry := strings.Repeat(line+"\n", 20) + "match\n" + strings.Repeat(line+"\n", 20) // -C 20: about 80 KiB an entry
	var jobs []grepJob
	for i := range limits.GrepBatchFiles {
		name := fmt.Sprintf("f%02d.txt", i)
		writeFile(t, filepath.Join(root, name), entry)
		jobs = append(jobs, grepJob{at: i, name: name})
	}
	plan, err := planGrep(GrepArgs{Pattern: "match", Context: 20}, 0)
	if err != nil {
		t.Fatal(err)
	}
	g := newGrepRun(&executor{provider: local.New()}, plan, rootTarget(t, root), []string{root})
	b := &grepBatch{jobs: jobs}
	g.searchBatch(context.Background(), newScanner(), b)
	kept, counted := 0, 0
	for _, fr := range b.results {
		if fr.err != nil || fr.count != 1 {
			t.Fatalf("%s: %d matches, %v", fr.name, fr.count, fr.err)
		}
		kept += len(fr.text)
		counted += fr.count
	}
	if most := limits.GrepKeepBytes + len(entry) + 41*len("f00.txt:00:-"); kept > most || counted != limits.GrepBatchFiles {
		t.Fatalf("the batch kept %d bytes (at most %d wanted) of %d matches", kept, most, counted)
	}
}

// TestGrepBatchEdges: a listing hands its files out in batches of
// limits.GrepBatchFiles files consecutive in the directory; a
// subdirectory between two files ends a batch.
func TestGrepBatchEdges(t *testing.T) {
	plan, err := planGrep(GrepArgs{Pattern: "x"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	run := func(names []string) []int {
		root := t.TempDir()
		for _, n := range names {
			writeFile(t, filepath.Join(root, n), "x\n")
		}
		g := newGrepRun(&executor{provider: local.New()}, plan, rootTarget(t, root), nil)
		_, tree, err := g.openTree(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		d := &grepDir{name: ".", tree: tree}
		tasks := g.list(context.Background(), d)
		var sizes []int
		for _, task := range tasks {
			if task.batch != nil {
				sizes = append(sizes, len(task.batch.jobs))
				d.release()
			} else {
				sizes = append(sizes, -1) // a subdirectory
				d.release()
			}
		}
		if d.pending.Load() != 0 {
			t.Fatalf("%d uses of the directory left", d.pending.Load())
		}
		return sizes
	}
	files := func(n int) []string {
		var names []string
		for i := range n {
			names = append(names, fmt.Sprintf("f%03d", i))
		}
		return names
	}
	k := limits.GrepBatchFiles
	for _, c := range []struct {
		what  string
		names []string
		want  []int
	}{
		{"files at the bound", files(k), []int{k}},
		{"one file past", files(k + 1), []int{k, 1}},
		{"a directory between", []string{"a", "b", "c/f", "d"}, []int{2, -1, 1}},
		{"a directory first", []string{"0/f", "a"}, []int{-1, 1}},
	} {
		if got := run(c.names); !slices.Equal(got, c.want) {
			t.Errorf("%s: batches of %v, want %v", c.what, got, c.want)
		}
	}
}
