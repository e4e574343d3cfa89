package tools

import (
	"context"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

// globFilter selects files by a glob: on the path relative to the search
// base, or on the base name when the glob has no /.
type globFilter struct {
	re       *regexp.Regexp
	baseOnly bool
}

func newGlobFilter(what, pattern string) (*globFilter, error) {
	if pattern == "" {
		return nil, nil
	}
	if len(pattern) > limits.GrepMaxPatternBytes {
		return nil, fault.LimitExceeded(what+" bytes", limits.GrepMaxPatternBytes, int64(len(pattern)))
	}
	re, err := compileGlob(pattern, doublestarSyntax)
	if err != nil {
		return nil, fault.New(fault.InvalidInput, "%s %q is not a valid pattern (e.g. **/*.go)", what, pattern)
	}
	return &globFilter{re: re, baseOnly: !strings.Contains(pattern, "/")}, nil
}

func (f *globFilter) match(rel string) bool {
	if f.baseOnly {
		rel = path.Base(rel)
	}
	return f.re.MatchString(rel)
}

// grepJob is one file to search, numbered in walk order; dir is its
// directory held open by the walk, if the provider's walk can (else nil:
// the file is opened by name), and release lets it go.
type grepJob struct {
	seq     int
	name    string // root-relative
	size    int64
	dir     files.WalkDir
	release func()
}

// grepRun is one grep call: a walk that feeds a bounded pool of workers,
// and a collector that takes their results in walk order, so the output
// is the same whatever the scheduling.
type grepRun struct {
	x     *executor
	plan  *grepPlan
	t     target
	roots []string

	// window holds a token per batch handed out and not yet collected
	// (the walk puts them, the collector takes them).
	window chan struct{}

	// walk state (the walking goroutine only)
	batch       *grepBatch // being filled
	batchSeq    int
	w           walker
	ignores     ignoreStack
	ignoreSkip  int
	dirsSkipped int
	seq         int
	collected   collector
}

// scanners keeps the workers' buffers (and their DFA caches) between
// files, batches and calls: a call of its own would allocate, fault in
// and clear a buffer per worker, and the garbage collector would hand it
// back to the system.
var scanners = sync.Pool{New: func() any { return newScanner() }}

func newGrepRun(x *executor, plan *grepPlan, t target, roots []string) *grepRun {
	g := &grepRun{x: x, plan: plan, t: t, roots: roots, w: walker{base: t.name}}
	g.collected = collector{plan: plan, research: g.research}
	return g
}

func grepWorkers() int {
	return max(1, min(runtime.GOMAXPROCS(0), limits.GrepMaxWorkers))
}

// errNoIgnore: the directory has no .gitignore.
var errNoIgnore = fault.New(fault.NotFound, "no .gitignore")

// grepBatch is a run of files consecutive in walk order, searched by one
// worker: a hand-off per batch rather than per file.
type grepBatch struct {
	seq     int
	jobs    []grepJob
	dirs    int // directories the jobs are in (each held open)
	results []fileResult
}

// run walks and searches, stopping at the first failure that is not the
// file's own (unavailable roots, cancellation).
func (g *grepRun) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := g.loadParentIgnores(ctx); err != nil {
		return err
	}
	workers := grepWorkers()
	batches := make(chan *grepBatch, workers)
	results := make(chan *grepBatch, workers)
	g.window = make(chan struct{}, 4*workers) // batches not yet collected
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for b := range batches {
				g.searchBatch(ctx, b)
				results <- b
			}
		})
	}
	walkDone := make(chan error, 1)
	go func() {
		defer close(batches)
		err := g.walk(ctx, func(info files.Info, dir files.WalkDir) error {
			return g.visit(ctx, info, dir, batches)
		})
		if ferr := g.flush(ctx, batches); err == nil {
			err = ferr
		}
		walkDone <- err
	}()
	go func() { wg.Wait(); close(results) }()
	firstErr := g.collect(ctx, cancel, results)
	if err := <-walkDone; err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}

// collect takes the batches' results in walk order, whatever order the
// workers finish them in.
func (g *grepRun) collect(ctx context.Context, cancel func(), results <-chan *grepBatch) error {
	var firstErr error
	pending := map[int]*grepBatch{}
	next := 0
	for b := range results {
		pending[b.seq] = b
		for p, ok := pending[next]; ok; p, ok = pending[next] {
			delete(pending, next)
			next++
			<-g.window
			for i := range p.results {
				if firstErr == nil {
					if firstErr = g.collected.add(ctx, &p.results[i]); firstErr != nil {
						cancel()
					}
				}
			}
		}
	}
	return firstErr
}

// walk walks the search base, with each entry's directory where the
// provider's walk can give it.
func (g *grepRun) walk(ctx context.Context, fn files.WalkOpenFunc) error {
	if ow, ok := g.x.provider.(files.OpenWalker); ok {
		return ow.WalkOpen(ctx, g.t.Target, fn)
	}
	return g.x.provider.Walk(ctx, g.t.Target, func(info files.Info) error { return fn(info, nil) })
}

// visit applies the walk rules and filters to one entry and queues the
// files to search.
func (g *grepRun) visit(ctx context.Context, info files.Info, wd files.WalkDir, batches chan<- *grepBatch) error {
	rel, depth, skip := g.w.visit(info)
	if skip != nil {
		return skip
	}
	g.ignores.enter(info.Name)
	if rel != "" {
		if dir := parentDir(info.Name); !g.ignores.checked(dir) {
			if err := g.loadIgnore(ctx, dir, wd); err != nil {
				return err
			}
		}
		if g.ignores.ignored(info.Name, info.IsDir()) {
			if info.IsDir() {
				return iofs.SkipDir
			}
			return nil
		}
	}
	if info.IsDir() {
		if depth >= limits.WalkMaxDepth {
			g.dirsSkipped++
			return iofs.SkipDir
		}
		return nil
	}
	if !info.IsRegular() || (rel != "" && !g.wanted(rel)) {
		return nil
	}
	return g.queue(ctx, info, wd, batches)
}

// queue adds one file to the batch being filled, with its directory held
// open when the walk has one: the worker opens it there, so the opens are
// spread over the workers too. A batch ends at limits.GrepBatchFiles
// files or limits.GrepBatchDirs directories, and the window bounds the
// batches handed out, so the directories held are bounded too.
func (g *grepRun) queue(ctx context.Context, info files.Info, wd files.WalkDir, batches chan<- *grepBatch) error {
	if g.batch == nil {
		g.batch = &grepBatch{seq: g.batchSeq, jobs: make([]grepJob, 0, limits.GrepBatchFiles)}
		g.batchSeq++
	}
	j := grepJob{seq: g.seq, name: info.Name, size: info.Size}
	g.seq++
	if wd != nil && !g.plan.scan.multiline {
		j.dir, j.release = wd, wd.Hold()
	}
	b := g.batch
	if k := len(b.jobs); k == 0 || parentDir(b.jobs[k-1].name) != parentDir(j.name) {
		b.dirs++
	}
	b.jobs = append(b.jobs, j)
	if len(b.jobs) < limits.GrepBatchFiles && b.dirs < limits.GrepBatchDirs {
		return nil
	}
	return g.flush(ctx, batches)
}

// flush hands the batch being filled to the workers. When the call ends
// first, its files are let go unsearched.
func (g *grepRun) flush(ctx context.Context, batches chan<- *grepBatch) error {
	b := g.batch
	if b == nil {
		return nil
	}
	g.batch = nil
	select {
	case g.window <- struct{}{}:
		batches <- b
		return nil
	case <-ctx.Done():
		for _, j := range b.jobs {
			if j.release != nil {
				j.release()
			}
		}
		return fault.As(ctx.Err())
	}
}

// parentDir is path.Dir of a clean root-relative name, without cleaning
// it again.
func parentDir(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return "."
}

// wanted applies the glob and type filters.
func (g *grepRun) wanted(rel string) bool {
	if g.plan.glob != nil && !g.plan.glob.match(rel) {
		return false
	}
	return g.plan.types == nil || typeMatches(g.plan.types, path.Base(rel))
}

// loadParentIgnores reads the .gitignore files of the directories above
// the search base, inside the root, so a search of a subdirectory honours
// them too.
func (g *grepRun) loadParentIgnores(ctx context.Context) error {
	if g.t.name == "." {
		return nil
	}
	parts := strings.Split(g.t.name, "/")
	for i := range parts {
		dir := path.Join(parts[:i]...)
		if dir == "" {
			dir = "."
		}
		if err := g.loadIgnore(ctx, dir, nil); err != nil {
			return err
		}
	}
	return nil
}

// loadIgnore reads dir/.gitignore, if there is one (through wd, the
// walk's open dir, when not nil), compiles it once and puts its rules in
// force below dir.
func (g *grepRun) loadIgnore(ctx context.Context, dir string, wd files.WalkDir) error {
	data, err := g.readIgnore(ctx, dir, wd)
	switch fault.CodeOf(err) {
	case "":
	case fault.Limit:
		g.ignoreSkip++
		g.ignores.push(&ignoreFile{dir: dir})
		return nil
	case fault.Unavailable:
		return err
	default:
		if ctx.Err() != nil {
			return fault.As(ctx.Err())
		}
		g.ignores.push(&ignoreFile{dir: dir}) // no .gitignore, or not a regular file: nothing to honour
		return nil
	}
	f, dropped := parseIgnore(dir, data, g.ignores.room())
	g.ignoreSkip += dropped
	if f == nil {
		g.ignoreSkip++
		f = &ignoreFile{dir: dir}
	}
	g.ignores.push(f)
	return nil
}

func (g *grepRun) readIgnore(ctx context.Context, dir string, wd files.WalkDir) ([]byte, error) {
	if wd == nil {
		data, _, err := g.x.readAllAt(ctx, g.t, path.Join(dir, ".gitignore"), limits.GitignoreMaxBytes)
		return data, err
	}
	if !wd.Listed(".gitignore") {
		return nil, errNoIgnore
	}
	f, err := wd.Open(".gitignore")
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

// searchBatch searches a batch's files in order with one pooled scanner,
// keeping at most limits.GrepKeepBytes of text for the whole batch (and
// the entry that passes it): once it is spent, the files after keep
// nothing, and the collector searches again for what the page needs.
func (g *grepRun) searchBatch(ctx context.Context, b *grepBatch) {
	sc := scanners.Get().(*scanner)
	defer scanners.Put(sc)
	b.results = make([]fileResult, len(b.jobs))
	kept := 0
	for i, j := range b.jobs {
		o := g.plan.scan
		o.keepFrom, o.keepTo = 0, g.plan.offset+g.plan.head
		if kept >= limits.GrepKeepBytes {
			o.keepTo = 0
		}
		o.maxKeepBytes = min(g.plan.maxOutput, limits.GrepKeepBytes-kept)
		fr := &b.results[i]
		*fr = fileResult{seq: j.seq, job: j}
		if err := ctx.Err(); err != nil {
			fr.err = fault.As(err)
		} else {
			fr.err = g.searchFile(ctx, sc, j, &o, fr)
		}
		if j.release != nil {
			j.release()
		}
		kept += len(fr.text)
	}
}

// research searches a file again for the entries [from, to) that its
// first search did not keep.
func (g *grepRun) research(ctx context.Context, j grepJob, from, to, maxBytes int) (*fileResult, error) {
	sc := scanners.Get().(*scanner)
	defer scanners.Put(sc)
	o := g.plan.scan
	o.keepFrom, o.keepTo, o.maxKeepBytes = from, to, maxBytes
	j.dir, j.release = nil, nil // let go after the first search: open by name
	fr := &fileResult{seq: j.seq, job: j}
	err := g.searchFile(ctx, sc, j, &o, fr)
	return fr, err
}

// searchFile opens and searches one file; a file that cannot be read is
// skipped and counted, unless the failure is the call's.
func (g *grepRun) searchFile(ctx context.Context, sc *scanner, j grepJob, o *scanOpts, fr *fileResult) error {
	fr.name = g.t.child(j.name)
	if !g.plan.numbered {
		o.unnumbered = true
	}
	var err error
	if o.multiline {
		err = g.searchWholeFile(ctx, j, o, fr)
	} else {
		err = g.streamFile(ctx, sc, j, o, fr)
	}
	if err == nil {
		return nil
	}
	if fault.CodeOf(err) == fault.Unavailable || ctx.Err() != nil {
		return err
	}
	*fr = fileResult{seq: fr.seq, job: j, name: fr.name, skipped: "unreadable"} // changed or vanished since it was listed
	return nil
}

func (g *grepRun) streamFile(ctx context.Context, sc *scanner, j grepJob, o *scanOpts, fr *fileResult) error {
	var f files.File
	var err error
	if j.dir != nil {
		f, err = j.dir.Open(path.Base(j.name))
	} else {
		f, err = g.x.openAt(ctx, g.t, j.name)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	// Through ReadAt: a search needs no version, and Read would hash
	// every byte to compute one. The file is searched as long as it was
	// when opened, which also spares the read that would find its end.
	sc.src = sizedReader{r: f, size: f.Info().Size}
	defer func() { sc.src = sizedReader{} }()
	return sc.search(ctx, &sc.src, o, fr)
}

func (g *grepRun) searchWholeFile(ctx context.Context, j grepJob, o *scanOpts, fr *fileResult) error {
	if j.size > limits.GrepMultilineMaxFileBytes {
		fr.skipped = "multiline"
		return nil
	}
	data, _, err := g.x.readAllAt(ctx, g.t, j.name, limits.GrepMultilineMaxFileBytes)
	if fault.CodeOf(err) == fault.Limit {
		fr.skipped = "multiline" // grew since it was listed
		return nil
	}
	if err != nil {
		return err
	}
	searchWhole(data, o, fr)
	return nil
}

// grepPage is what a search collected: its counts and the entries from
// the offset on that fit the output bound, to be cut with the summary
// added (result).
type grepPage struct {
	g        *grepRun
	counts   GrepResult // nothing shown
	out      []byte
	ends     []int
	boundHit bool
}

// page returns what the search collected.
func (g *grepRun) page() *grepPage {
	c := &g.collected
	res := c.res
	res.Offset = g.plan.offset
	res.DirsSkipped = g.dirsSkipped
	res.Stopped = g.w.stopped
	res.IgnoreSkipped = g.ignoreSkip
	return &grepPage{g: g, counts: res, out: c.out, ends: c.ends, boundHit: c.boundHit}
}

// collected is the number of entries the page holds; pending whether
// any entry lies from the offset on.
func (p *grepPage) collected() int { return len(p.ends) }
func (p *grepPage) pending() bool  { return p.counts.Total > p.counts.Offset }

// result is the page's first n entries and its summary.
func (p *grepPage) result(n int) GrepResult {
	res := p.counts
	res.Shown, res.NotShown = n, res.Total-n
	if res.Total > res.Offset+n {
		res.NextOffset = res.Offset + n
	}
	end := 0
	if n > 0 {
		end = p.ends[n-1]
	}
	var b strings.Builder
	b.Grow(end + 512)
	b.Write(p.out[:end])
	p.g.summary(&b, &res, p.boundHit || n < len(p.ends))
	res.text = b.String()
	return res
}

// summary says what the page holds; bound says the output bound cut it.
func (g *grepRun) summary(b *strings.Builder, res *GrepResult, bound bool) {
	what := map[grepMode]string{modeContent: "matching lines", modeFiles: "files with matches", modeCount: "files with matches"}[g.plan.scan.mode]
	b.WriteString("(")
	b.WriteString(strconv.Itoa(res.Total))
	b.WriteString(" ")
	b.WriteString(what)
	if g.plan.scan.mode == modeContent {
		b.WriteString(" in ")
		b.WriteString(strconv.Itoa(res.FilesMatched))
		b.WriteString(" files")
	}
	if res.Shown > 0 && (res.Offset > 0 || res.NotShown > 0) {
		b.WriteString("; showing ")
		b.WriteString(strconv.Itoa(res.Offset + 1))
		b.WriteString("–")
		b.WriteString(strconv.Itoa(res.Offset + res.Shown))
	}
	if res.NotShown > 0 {
		b.WriteString("; ")
		b.WriteString(strconv.Itoa(res.NotShown))
		b.WriteString(" not shown")
		if res.NextOffset > 0 {
			b.WriteString(": the next page is offset=")
			b.WriteString(strconv.Itoa(res.NextOffset))
			if bound {
				b.WriteString(" (the output bound was reached)")
			}
		}
	}
	b.WriteString(")\n")
	g.notes(b, res)
}

// notes says what was not searched or not honoured.
func (g *grepRun) notes(b *strings.Builder, res *GrepResult) {
	if res.DirsSkipped > 0 {
		fmt.Fprintf(b, "(%d directories deeper than %d levels not searched)\n", res.DirsSkipped, limits.WalkMaxDepth)
	}
	if res.Stopped {
		fmt.Fprintf(b, "(the search stopped after %d entries: search a subdirectory)\n", limits.WalkMaxFiles)
	}
	if res.FilesSkipped > 0 {
		fmt.Fprintf(b, "(%d files not searched: binary or unreadable", res.FilesSkipped)
		if g.plan.scan.multiline {
			fmt.Fprintf(b, ", or over %s for multiline", limits.Bytes(limits.GrepMultilineMaxFileBytes))
		}
		b.WriteString(")\n")
	}
	if res.LongLines > 0 {
		fmt.Fprintf(b, "(%d lines longer than %s were searched in pieces of that size; a match across two pieces is not found)\n", res.LongLines, limits.Bytes(limits.GrepChunkBytes))
	}
	if res.IgnoreSkipped > 0 {
		fmt.Fprintf(b, "(%d .gitignore files or rules were not honoured: a file over %s, rules past %s in force at once, or a rule over %s or not valid)\n",
			res.IgnoreSkipped, limits.Bytes(limits.GitignoreMaxBytes), limits.Count(limits.GitignoreMaxRules), limits.Bytes(limits.GitignoreMaxRuleBytes))
	}
}
