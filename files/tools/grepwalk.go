package tools

import (
	"context"
	"io"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

// The walk of a grep is parallel: the workers take directories to list
// as well as batches of files to search from one stack, so listing and
// searching overlap on every core. A directory's listing puts its
// subdirectories and batches in the stack where their keys (their place
// in walk order: depth first, each directory's names in byte order) put
// them, so the stack, top first, is always in walk order: a worker takes
// the earliest work, and the collector reads
// the directories and batches in walk order, whatever order they were
// done in, so the result is the one a sequential walk gives. Every rule
// of the walk (the entries counted up to limits.WalkMaxFiles, .git,
// .gitignore, the depth bound) is applied in walk order by the collector
// from what each listing recorded.
//
// A worker takes work only while fewer than grepWindow() tasks (twice
// that for a task before the latest taken) are taken and not yet
// collected, which bounds the results kept and the directories held
// open; the task the collector waits for is always taken (it is the
// stack's top when it is there), so the walk never waits on itself.

// grepDir is a directory of the walk, listed by a worker.
type grepDir struct {
	grepTaskState
	name   string // root-relative
	depth  int    // below the search base (0 for it)
	entry  files.DirEntry
	parent *grepDir
	// tree is the directory, open from its listing until the last task
	// that needs it (its subdirectories' opens, its batches) is done.
	tree    files.WalkTree
	pending atomic.Int32

	// what its listing recorded, read by the collector once done
	n          int          // entries walked
	slots      []grepSlot   // what the walk does with them, in order
	deep       []int        // the entries that are directories too deep to search
	ign        *ignoreChain // the .gitignore rules in force for its entries
	ignoreSkip int          // rules or files of its .gitignore not honoured
	err        error        // the walk's failure after errAt entries
	errAt      int
	gone       bool // removed since its parent was listed
}

// grepSlot is a subdirectory or a batch of files of a directory, at
// entry index at of its listing.
type grepSlot struct {
	at    int
	dir   *grepDir
	batch *grepBatch
}

// grepBatch is files consecutive in one directory's listing, searched by
// one worker: a hand-off per batch rather than per file.
type grepBatch struct {
	grepTaskState
	dir     *grepDir
	jobs    []grepJob
	results []fileResult
}

// grepJob is one file to search: at is its index in its directory's
// listing; dir is the directory it is opened in, nil to open it by name.
type grepJob struct {
	at   int
	name string // root-relative
	dir  files.WalkTree
}

// grepTaskState is where a task is in the walk: key is its place in
// walk order (the indexes of its slot and of its directories' slots
// from the search base's; keys compare as slices), so that the task
// taken is always the earliest in walk order.
type grepTaskState struct {
	key         []int32
	taken, done bool
}

// grepTask is a directory to list or a batch to search.
type grepTask struct {
	dir   *grepDir
	batch *grepBatch
}

func (t grepTask) state() *grepTaskState {
	if t.dir != nil {
		return &t.dir.grepTaskState
	}
	return &t.batch.grepTaskState
}

func grepWindow() int { return limits.GrepTasksPerWorker * grepWorkers() }

// release lets go of one task's use of d's directory; the last closes it.
func (d *grepDir) release() {
	if d.pending.Add(-1) == 0 {
		d.tree.Close()
	}
}

// walkTree walks and searches the directory tree, collecting in walk
// order; it returns when the collector is done and every worker has
// stopped, with every directory closed.
func (g *grepRun) walkTree(ctx context.Context, root *grepDir) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g.work.L, g.ready.L = &g.mu, &g.mu
	g.stack = append(g.stack, grepTask{dir: root})
	var wg sync.WaitGroup
	for range grepWorkers() {
		wg.Go(func() { g.worker(ctx) })
	}
	err := g.collectDir(ctx, root)
	g.mu.Lock()
	g.closed = true
	g.work.Broadcast()
	g.mu.Unlock()
	cancel()
	wg.Wait()
	for _, t := range g.stack { // never taken: let their directories go
		if t.dir != nil {
			t.dir.parent.release()
		} else {
			t.batch.dir.release()
		}
	}
	g.stack = nil
	return err
}

func (g *grepRun) worker(ctx context.Context) {
	sc := scanners.Get().(*scanner)
	defer scanners.Put(sc)
	for {
		t, ok := g.take()
		if !ok {
			return
		}
		var children []grepTask
		if t.dir != nil {
			children = g.list(ctx, t.dir)
		} else {
			g.searchBatch(ctx, sc, t.batch)
			t.batch.dir.release()
		}
		g.mu.Lock()
		t.state().done = true
		if len(children) > 0 {
			g.push(t.dir.key, children)
			g.work.Broadcast()
		}
		wanted := g.want == t
		if wanted {
			g.ready.Signal()
		}
		g.mu.Unlock()
		if wanted {
			// The collector was woken onto this worker's processor: let
			// it run now, rather than once this worker blocks with the
			// window full.
			runtime.Gosched()
		}
	}
}

// push puts the tasks of the directory with key in the stack (top last,
// in reverse walk order) in walk order: where key falls, since nothing
// else in the stack lies below it.
func (g *grepRun) push(key []int32, tasks []grepTask) {
	at, _ := slices.BinarySearchFunc(g.stack, key, func(t grepTask, key []int32) int { return slices.Compare(key, t.state().key) })
	slices.Reverse(tasks)
	g.stack = slices.Insert(g.stack, at, tasks...)
}

// take waits for the stack's top and a free place in the window, or for
// the walk's end. The collector's next task needs no place, and a task
// before the frontier (the latest taken: a directory listed late put it
// there) has a second window of its own, so that the workers fill the
// gap the collector is about to need together rather than one at a time.
func (g *grepRun) take() (grepTask, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for !g.closed {
		if n := len(g.stack); n > 0 {
			t := g.stack[n-1]
			key := t.state().key
			ahead := slices.Compare(key, g.frontier) > 0
			if g.inflight < grepWindow() || t == g.want || !ahead && g.inflight < 2*grepWindow() {
				g.stack = g.stack[:n-1]
				g.inflight++
				t.state().taken = true
				if ahead {
					g.frontier = key
				}
				return t, true
			}
		}
		g.work.Wait()
	}
	return grepTask{}, false
}

// await waits until t is done, then counts it collected.
func (g *grepRun) await(t grepTask) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := t.state()
	for !st.done {
		g.want = t
		if !st.taken {
			g.work.Broadcast() // the top of the stack: a worker may take it at once
		}
		g.ready.Wait()
	}
	g.want = grepTask{}
	g.inflight--
	g.work.Signal()
}

// list opens (unless it is the search base) and lists d, and records
// what the walk does with each entry; it returns the tasks of its
// subdirectories and batches, in walk order.
func (g *grepRun) list(ctx context.Context, d *grepDir) []grepTask {
	if d.tree == nil {
		tree, err := d.parent.tree.Sub(ctx, d.entry)
		d.parent.release()
		if err != nil || tree == nil {
			d.err, d.gone = err, err == nil
			return nil
		}
		d.tree = tree
	}
	d.pending.Add(1) // the listing's own use
	defer d.release()
	entries, err := d.tree.List(ctx, limits.WalkMaxFiles)
	d.n, d.err, d.errAt = len(entries), err, len(entries)
	if len(entries) == 0 {
		return nil
	}
	d.ign, d.ignoreSkip, err = g.loadIgnore(ctx, d.parent.chain(g.base), d.name, d.tree)
	if err != nil {
		d.err, d.errAt = err, 1 // where a sequential walk looks for it: at the first entry
		return nil
	}
	var tasks []grepTask
	var b *grepBatch
	for i, e := range entries {
		if i%256 == 0 && ctx.Err() != nil {
			d.err, d.errAt = fault.As(ctx.Err()), i
			break
		}
		isDir := e.IsDir()
		switch {
		case isDir && path.Base(e.Name) == ".git", d.ign.ignored(e.Name, isDir):
		case isDir && d.depth+1 >= limits.WalkMaxDepth:
			d.deep = append(d.deep, i)
		case isDir:
			sub := &grepDir{grepTaskState: d.childState(len(d.slots)), name: e.Name, depth: d.depth + 1, entry: e, parent: d}
			d.pending.Add(1)
			d.slots = append(d.slots, grepSlot{at: i, dir: sub})
			tasks = append(tasks, grepTask{dir: sub})
			b = nil
		case e.IsRegular() && g.wanted(g.rel(e.Name)):
			if b == nil || len(b.jobs) == limits.GrepBatchFiles {
				b = &grepBatch{grepTaskState: d.childState(len(d.slots)), dir: d, jobs: make([]grepJob, 0, min(limits.GrepBatchFiles, len(entries)-i))}
				d.pending.Add(1)
				d.slots = append(d.slots, grepSlot{at: i, batch: b})
				tasks = append(tasks, grepTask{batch: b})
			}
			j := grepJob{at: i, name: e.Name}
			if !g.plan.scan.multiline {
				j.dir = d.tree
			}
			b.jobs = append(b.jobs, j)
		}
	}
	return tasks
}

// childState is the state of d's slot i, not yet taken.
func (d *grepDir) childState(i int) grepTaskState {
	key := make([]int32, len(d.key)+1)
	copy(key, d.key)
	key[len(d.key)] = int32(i)
	return grepTaskState{key: key}
}

// chain is the ignore rules in force in d (base for the search base's
// parent, nil).
func (d *grepDir) chain(base *ignoreChain) *ignoreChain {
	if d == nil {
		return base
	}
	return d.ign
}

// rel is name relative to the search base.
func (g *grepRun) rel(name string) string {
	if g.t.name == "." {
		return name
	}
	return name[len(g.t.name)+1:]
}

// collectDir takes d's results in walk order, counting its entries as a
// sequential walk visits them: it stops (g.stopped) past
// limits.WalkMaxFiles entries, and fails where the walk would.
func (g *grepRun) collectDir(ctx context.Context, d *grepDir) error {
	g.await(grepTask{dir: d})
	if d.gone {
		return nil
	}
	if d.errAt == 0 && d.err != nil {
		return d.err
	}
	c := entryCursor{d: d}
	for i, s := range d.slots {
		d.slots[i] = grepSlot{} // collected: let its results and directories go
		if !g.visitTo(&c, s.at) {
			return nil
		}
		if s.dir != nil {
			if !g.visitTo(&c, s.at+1) {
				return nil
			}
			if err := g.collectDir(ctx, s.dir); err != nil || g.stopped {
				return err
			}
			continue
		}
		g.await(grepTask{batch: s.batch})
		for k, j := range s.batch.jobs {
			if !g.visitTo(&c, j.at+1) {
				return nil
			}
			if err := g.collected.add(ctx, j, &s.batch.results[k]); err != nil {
				return err
			}
		}
	}
	end := d.n
	if d.err != nil {
		end = d.errAt
	}
	if !g.visitTo(&c, end) {
		return nil
	}
	return d.err
}

// entryCursor is how far the collector has walked a directory's entries.
type entryCursor struct {
	d        *grepDir
	pos      int
	nextDeep int
}

// visitTo counts the entries up to to as walked, and reports false once
// the walk has passed g.maxEntries entries (it stops there).
func (g *grepRun) visitTo(c *entryCursor, to int) bool {
	for ; c.pos < to; c.pos++ {
		if g.walked++; g.walked > g.maxEntries {
			g.stopped = true
			return false
		}
		if c.pos == 0 {
			g.ignoreSkip += c.d.ignoreSkip
		}
		if c.nextDeep < len(c.d.deep) && c.d.deep[c.nextDeep] == c.pos {
			g.dirsSkipped++
			c.nextDeep++
		}
	}
	return true
}

// loadIgnore reads dir/.gitignore, if there is one (through tree, the
// directory open, when not nil), compiles it once and returns the chain
// of rules in force in dir, with the rules or files not honoured.
func (g *grepRun) loadIgnore(ctx context.Context, parent *ignoreChain, dir string, tree files.WalkTree) (*ignoreChain, int, error) {
	data, err := g.readIgnore(ctx, dir, tree)
	switch fault.CodeOf(err) {
	case "":
	case fault.Limit:
		return parent.with(&ignoreFile{dir: dir}), 1, nil
	case fault.Unavailable:
		return nil, 0, err
	default:
		if ctx.Err() != nil {
			return nil, 0, fault.As(ctx.Err())
		}
		return parent.with(&ignoreFile{dir: dir}), 0, nil // no .gitignore, or not a regular file: nothing to honour
	}
	f, dropped := parseIgnore(dir, data, parent.room())
	if f == nil {
		dropped++
		f = &ignoreFile{dir: dir}
	}
	return parent.with(f), dropped, nil
}

func (g *grepRun) readIgnore(ctx context.Context, dir string, tree files.WalkTree) ([]byte, error) {
	if tree == nil {
		data, _, err := g.x.readAllAt(ctx, g.t, path.Join(dir, ".gitignore"), limits.GitignoreMaxBytes)
		return data, err
	}
	if !tree.Listed(".gitignore") {
		return nil, errNoIgnore
	}
	f, err := tree.Open(".gitignore")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size := f.Info().Size; size > limits.GitignoreMaxBytes {
		return nil, fault.LimitExceeded(".gitignore bytes", limits.GitignoreMaxBytes, size)
	}
	data, err := io.ReadAll(io.LimitReader(f, limits.GitignoreMaxBytes+1))
	if err == nil && len(data) > limits.GitignoreMaxBytes {
		err = fault.LimitExceeded(".gitignore bytes", limits.GitignoreMaxBytes, int64(len(data)))
	}
	return data, err
}

// namedTree is the tree walk of a provider without one (not a
// files.TreeWalker): each directory listed by its ReadDir, each file
// opened by name through the scope, resolved from the root again. It
// keeps the call's ctx because WalkTree.Open has none.
type namedTree struct {
	ctx     context.Context
	x       *executor
	t       target
	name    string // root-relative
	entries []files.DirEntry
}

// openNamedTree opens t for a namedTree walk: a directory, or a regular
// file that is its own walk.
func openNamedTree(ctx context.Context, x *executor, t target) (files.Info, files.WalkTree, error) {
	info, err := x.provider.Stat(ctx, t.Target)
	switch {
	case err != nil:
		return files.Info{}, nil, err
	case info.IsDir():
		return info, &namedTree{ctx: ctx, x: x, t: t, name: t.name}, nil
	case info.IsRegular():
		return info, nil, nil
	}
	return files.Info{}, nil, fault.New(fault.InvalidInput, "%s: not a directory or regular file", t.name)
}

func (n *namedTree) List(ctx context.Context, max int) ([]files.DirEntry, error) {
	c, err := n.t.At(n.name)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	entries, total, err := n.x.provider.ReadDir(ctx, c, max)
	if err == nil && total > max {
		err = fault.New(fault.Limit, "directory %q has more than %d entries (the limit)", n.name, max)
	}
	if err != nil {
		return nil, err
	}
	n.entries = entries
	return entries, nil
}

func (n *namedTree) Listed(base string) bool {
	_, ok := slices.BinarySearchFunc(n.entries, n.child(base), func(e files.DirEntry, name string) int { return strings.Compare(e.Name, name) })
	return ok
}

func (n *namedTree) Open(base string) (files.File, error) {
	return n.x.openAt(n.ctx, n.t, n.child(base))
}

func (n *namedTree) Sub(_ context.Context, e files.DirEntry) (files.WalkTree, error) {
	return &namedTree{ctx: n.ctx, x: n.x, t: n.t, name: e.Name}, nil
}

func (n *namedTree) Close() {}

func (n *namedTree) child(base string) string {
	if n.name == "." {
		return base
	}
	return n.name + "/" + base
}
