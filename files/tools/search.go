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

// grepJob is one file to search, numbered in walk order; f is the file
// already opened by the walk, if the provider's walk can (else nil).
type grepJob struct {
	seq  int
	name string // root-relative
	size int64
	f    files.File
}

// errVanished is the failure of a file that could not be opened when it
// was listed.
var errVanished = fault.New(fault.NotFound, "the file changed or vanished since it was listed")

// grepRun is one grep call: a walk that feeds a bounded pool of workers,
// and a collector that takes their results in walk order, so the output
// is the same whatever the scheduling.
type grepRun struct {
	x     *executor
	plan  *grepPlan
	t     target
	roots []string

	// walk state (the walking goroutine only)
	w            walker
	ignores      ignoreStack
	ignoreSkip   int
	dirsSkipped  int
	seq          int
	collected    collector
	scannerPool  sync.Pool
	researchScan *scanner
}

func newGrepRun(x *executor, plan *grepPlan, t target, roots []string) *grepRun {
	g := &grepRun{x: x, plan: plan, t: t, roots: roots, w: walker{base: t.name}}
	g.scannerPool.New = func() any { return newScanner() }
	g.collected = collector{plan: plan, research: g.research}
	return g
}

func grepWorkers() int {
	return max(1, min(runtime.GOMAXPROCS(0), limits.GrepMaxWorkers))
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
	jobs := make(chan grepJob, workers)
	results := make(chan *fileResult, workers)
	window := make(chan struct{}, 4*workers) // results not yet collected
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				results <- g.searchJob(ctx, j)
			}
		})
	}
	walkDone := make(chan error, 1)
	go func() {
		defer close(jobs)
		walkDone <- g.walk(ctx, func(info files.Info, open opener) error {
			return g.visit(ctx, info, open, jobs, window)
		})
	}()
	go func() { wg.Wait(); close(results) }()
	var firstErr error
	pending := map[int]*fileResult{}
	next := 0
	for fr := range results {
		pending[fr.seq] = fr
		for p, ok := pending[next]; ok; p, ok = pending[next] {
			delete(pending, next)
			next++
			<-window
			if firstErr == nil {
				if firstErr = g.collected.add(ctx, p); firstErr != nil {
					cancel()
				}
			}
		}
	}
	if err := <-walkDone; err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}

// opener opens a file of the directory being walked (files.WalkOpenFunc).
type opener = func(base string) (files.File, error)

// walk walks the search base, with an opener where the provider has one.
func (g *grepRun) walk(ctx context.Context, fn files.WalkOpenFunc) error {
	if ow, ok := g.x.provider.(files.OpenWalker); ok {
		return ow.WalkOpen(ctx, g.t.root, g.t.name, fn)
	}
	return g.x.provider.Walk(ctx, g.t.root, g.t.name, func(info files.Info) error { return fn(info, nil) })
}

// visit applies the walk rules and filters to one entry and queues the
// files to search.
func (g *grepRun) visit(ctx context.Context, info files.Info, open opener, jobs chan<- grepJob, window chan struct{}) error {
	rel, depth, skip := g.w.visit(info)
	if skip != nil {
		return skip
	}
	g.ignores.enter(info.Name)
	if rel != "" {
		if dir := path.Dir(info.Name); !g.ignores.checked(dir) {
			if err := g.loadIgnore(ctx, dir, open); err != nil {
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
	return g.queue(ctx, info, open, jobs, window)
}

// queue hands one file to the workers, opened here when the walk can.
func (g *grepRun) queue(ctx context.Context, info files.Info, open opener, jobs chan<- grepJob, window chan struct{}) error {
	select {
	case window <- struct{}{}:
	case <-ctx.Done():
		return fault.As(ctx.Err())
	}
	j := grepJob{seq: g.seq, name: info.Name, size: info.Size}
	g.seq++
	if open != nil && !g.plan.scan.multiline {
		f, err := open(path.Base(info.Name))
		if err != nil {
			if fault.CodeOf(err) == fault.Unavailable || ctx.Err() != nil {
				return err
			}
			j.name = "" // vanished or changed since it was listed: the worker counts it
		}
		j.f = f
	}
	jobs <- j
	return nil
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

// loadIgnore reads dir/.gitignore, if there is one (through open, which
// opens in dir, when not nil), compiles it once and puts its rules in
// force below dir.
func (g *grepRun) loadIgnore(ctx context.Context, dir string, open opener) error {
	data, err := g.readIgnore(ctx, dir, open)
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

func (g *grepRun) readIgnore(ctx context.Context, dir string, open opener) ([]byte, error) {
	if open == nil {
		data, _, err := g.x.provider.ReadAll(ctx, g.t.root, path.Join(dir, ".gitignore"), limits.GitignoreMaxBytes)
		return data, err
	}
	f, err := open(".gitignore")
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

// searchJob searches one file with a pooled scanner.
func (g *grepRun) searchJob(ctx context.Context, j grepJob) *fileResult {
	o := g.plan.scan
	o.keepFrom, o.keepTo = 0, g.plan.offset+g.plan.head
	o.maxKeepBytes = min(g.plan.maxOutput, limits.GrepKeepBytes)
	fr := &fileResult{seq: j.seq, job: j}
	sc := g.scannerPool.Get().(*scanner)
	defer g.scannerPool.Put(sc)
	fr.err = g.searchFile(ctx, sc, j, &o, fr)
	return fr
}

// research searches a file again for the entries [from, to) that its
// first search did not keep.
func (g *grepRun) research(ctx context.Context, j grepJob, from, to, maxBytes int) (*fileResult, error) {
	if g.researchScan == nil {
		g.researchScan = newScanner()
	}
	o := g.plan.scan
	o.keepFrom, o.keepTo, o.maxKeepBytes = from, to, maxBytes
	j.f = nil // the walk's handle was closed after the first search: open again
	fr := &fileResult{seq: j.seq, job: j}
	err := g.searchFile(ctx, g.researchScan, j, &o, fr)
	return fr, err
}

// searchFile opens and searches one file; a file that cannot be read is
// skipped and counted, unless the failure is the call's.
func (g *grepRun) searchFile(ctx context.Context, sc *scanner, j grepJob, o *scanOpts, fr *fileResult) error {
	fr.name = display(g.roots, g.t.root, j.name)
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
	f := j.f
	if f == nil {
		if j.name == "" {
			return errVanished
		}
		var err error
		if f, err = g.x.provider.Open(ctx, g.t.root, j.name); err != nil {
			return err
		}
	}
	defer f.Close()
	// Through ReadAt: a search needs no version, and Read would hash
	// every byte to compute one. The file is searched as long as it was
	// when opened, which also spares the read that would find its end.
	return sc.search(ctx, io.NewSectionReader(f, 0, f.Info().Size), o, fr)
}

func (g *grepRun) searchWholeFile(ctx context.Context, j grepJob, o *scanOpts, fr *fileResult) error {
	if j.size > limits.GrepMultilineMaxFileBytes {
		fr.skipped = "multiline"
		return nil
	}
	data, _, err := g.x.provider.ReadAll(ctx, g.t.root, j.name, limits.GrepMultilineMaxFileBytes)
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

// result assembles the structured result and the text.
func (g *grepRun) result() GrepResult {
	c := &g.collected
	c.finish()
	res := c.res
	res.Offset = g.plan.offset
	res.NotShown = res.Total - res.Shown
	res.DirsSkipped = g.dirsSkipped
	res.Stopped = g.w.stopped
	res.IgnoreSkipped = g.ignoreSkip
	var b strings.Builder
	b.Grow(len(c.out) + 512)
	b.Write(c.out)
	g.summary(&b, &res)
	res.text = b.String()
	return res
}

func (g *grepRun) summary(b *strings.Builder, res *GrepResult) {
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
			if g.collected.boundHit {
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
