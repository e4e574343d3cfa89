package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
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

// heldCounting is the local provider with its walk's directory holds
// counted: how many distinct directories are held at once, at most.
type heldCounting struct {
	*local.Provider
	mu        sync.Mutex
	held      map[string]int
	most      int
	slowOpens bool
}

func (p *heldCounting) WalkOpen(ctx context.Context, t *scope.Target, fn files.WalkOpenFunc) error {
	return p.Provider.WalkOpen(ctx, t, func(info files.Info, dir files.WalkDir) error {
		if dir != nil {
			dir = &countedDir{WalkDir: dir, p: p, name: path.Dir(info.Name)}
		}
		return fn(info, dir)
	})
}

type countedDir struct {
	files.WalkDir
	p    *heldCounting
	name string
}

func (d *countedDir) Hold() func() {
	p := d.p
	p.mu.Lock()
	p.held[d.name]++
	p.most = max(p.most, len(p.held))
	p.mu.Unlock()
	release := d.WalkDir.Hold()
	return func() {
		p.mu.Lock()
		if p.held[d.name]--; p.held[d.name] == 0 {
			delete(p.held, d.name)
		}
		p.mu.Unlock()
		release()
	}
}

func (d *countedDir) Open(base string) (files.File, error) {
	if d.p.slowOpens && base != ".gitignore" {
		time.Sleep(time.Millisecond) // the walk runs ahead of the workers
	}
	return d.WalkDir.Open(base)
}

// TestGrepHoldsFewDirectories: however far the walk runs ahead of slow
// workers, the directories it holds open for them stay within the
// batches in flight times limits.GrepBatchDirs, not one per file queued.
func TestGrepHoldsFewDirectories(t *testing.T) {
	root := t.TempDir()
	const dirs = 400
	for i := range dirs {
		writeFile(t, filepath.Join(root, fmt.Sprintf("d%03d", i), "f.txt"), "match\n")
	}
	p := &heldCounting{Provider: local.New(), held: map[string]int{}, slowOpens: true}
	s := newSession(t, newRuntime(t, &ToolOptions{Provider: p}), allEffects, root)
	res := mustResult(t, s, Grep, obj{"pattern": "match", "output_mode": "count"})
	if want := fmt.Sprintf("(%d files with matches)", dirs); !strings.Contains(res.Text, want) {
		t.Fatalf("%s, want %s", res.Text, want)
	}
	if bound := (4*grepWorkers() + 1) * limits.GrepBatchDirs; p.most > bound || p.most == 0 {
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
		p := &heldCounting{Provider: local.New(), held: map[string]int{}, slowOpens: true}
		s := newSession(t, newRuntime(t, &ToolOptions{Provider: p}), allEffects, root)
		ctx, cancel := context.WithTimeout(context.Background(), after)
		_, err := s.Call(ctx, Grep, json.RawMessage(`{"pattern": "match", "output_mode": "count"}`))
		cancel()
		if err == nil {
			t.Fatalf("cancelled after %v: the grep of 300 slow directories succeeded", after)
		}
		// The call returns at its deadline; its workers release what they
		// held as they stop.
		deadline := time.Now().Add(time.Minute)
		for {
			p.mu.Lock()
			left, most := len(p.held), p.most
			p.mu.Unlock()
			if left == 0 {
				held = max(held, most)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cancelled after %v: %d directories still held (%d at most)", after, left, most)
			}
			time.Sleep(time.Millisecond)
		}
	}
	if held == 0 {
		t.Fatal("no cancelled call held a directory: the test saw no hold to release")
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
		jobs = append(jobs, grepJob{seq: i, name: name, size: int64(len(entry))})
	}
	plan, err := planGrep(GrepArgs{Pattern: "match", Context: 20}, 0)
	if err != nil {
		t.Fatal(err)
	}
	g := newGrepRun(&executor{provider: local.New()}, plan, rootTarget(t, root), []string{root})
	b := &grepBatch{jobs: jobs}
	g.searchBatch(context.Background(), b)
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

// TestGrepBatchEdges: a batch is handed out at limits.GrepBatchFiles
// files, or when a file in its limits.GrepBatchDirs-th directory joins
// it; the next file starts the next batch.
func TestGrepBatchEdges(t *testing.T) {
	plan, err := planGrep(GrepArgs{Pattern: "x"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	run := func(names []string) []int {
		g := newGrepRun(&executor{provider: local.New()}, plan, rootTarget(t, t.TempDir()), nil)
		g.window = make(chan struct{}, len(names)+1)
		batches := make(chan *grepBatch, len(names)+1)
		for _, n := range names {
			if err := g.queue(context.Background(), files.Info{Name: n}, nil, batches); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.flush(context.Background(), batches); err != nil {
			t.Fatal(err)
		}
		close(batches)
		var sizes []int
		for b := range batches {
			sizes = append(sizes, len(b.jobs))
		}
		return sizes
	}
	inOne := func(n int) []string {
		var names []string
		for i := range n {
			names = append(names, fmt.Sprintf("d/f%03d", i))
		}
		return names
	}
	inDirs := func(n int) []string {
		var names []string
		for i := range n {
			names = append(names, fmt.Sprintf("d%d/f", i), fmt.Sprintf("d%d/g", i))
		}
		return names
	}
	k, d := limits.GrepBatchFiles, limits.GrepBatchDirs
	for _, c := range []struct {
		what  string
		names []string
		want  []int
	}{
		{"files at the bound", inOne(k), []int{k}},
		{"one file past", inOne(k + 1), []int{k, 1}},
		{"directories at the bound", inDirs(d), []int{2*d - 1, 1}},
		{"one directory past", inDirs(d + 1), []int{2*d - 1, 3}},
	} {
		if got := run(c.names); !slices.Equal(got, c.want) {
			t.Errorf("%s: batches of %v, want %v", c.what, got, c.want)
		}
	}
}
