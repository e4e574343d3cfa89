package tools

import (
	"context"
	"fmt"
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

// grepRun is one grep call: a parallel walk whose workers list
// directories and search batches of files, and a collector that takes
// their results in walk order, so the output is the same whatever the
// scheduling (grepwalk.go).
type grepRun struct {
	x     *executor
	plan  *grepPlan
	t     target
	roots []string
	base  *ignoreChain // the rules of the directories above the search base

	// the walk's work, under mu: the stack of tasks not yet taken,
	// inflight those taken and not yet collected, want the one the
	// collector waits for; workers wait on work, the collector on ready
	// (grepwalk.go).
	mu          sync.Mutex
	work, ready sync.Cond
	stack       []grepTask
	inflight    int
	frontier    []int32 // the key of the latest task taken
	want        grepTask
	closed      bool

	// the collector's
	maxEntries  int // the entries walked at most: limits.WalkMaxFiles
	collected   collector
	walked      int // entries walked, the search base first
	stopped     bool
	ignoreSkip  int
	dirsSkipped int
}

// scanners keeps the workers' buffers (and their DFA caches) between
// calls: a call of its own would allocate, fault in and clear a buffer
// per worker, and the garbage collector would hand it back to the
// system. A worker holds its scanner for the whole call: put back after
// each batch, it would be dropped by any collection during the call
// (several in a call over a large tree) and allocated again.
var scanners = sync.Pool{New: func() any { return newScanner() }}

func newGrepRun(x *executor, plan *grepPlan, t target, roots []string) *grepRun {
	g := &grepRun{x: x, plan: plan, t: t, roots: roots, maxEntries: limits.WalkMaxFiles}
	g.collected = collector{plan: plan, research: g.research}
	return g
}

func grepWorkers() int {
	return max(1, min(runtime.GOMAXPROCS(0), limits.GrepMaxWorkers))
}

// errNoIgnore: the directory has no .gitignore.
var errNoIgnore = fault.New(fault.NotFound, "no .gitignore")

// run walks and searches, stopping at the first failure that is not the
// file's own (unavailable roots, cancellation, a tree that changed).
func (g *grepRun) run(ctx context.Context) error {
	if err := g.loadParentIgnores(ctx); err != nil {
		return err
	}
	info, tree, err := g.openTree(ctx)
	if err != nil {
		return err
	}
	g.walked = 1
	if tree == nil || path.Base(info.Name) == ".git" {
		if tree != nil {
			tree.Close()
			return nil
		}
		if !info.IsRegular() {
			return nil
		}
		b := &grepBatch{jobs: []grepJob{{name: info.Name}}}
		sc := scanners.Get().(*scanner)
		defer scanners.Put(sc)
		g.searchBatch(ctx, sc, b)
		return g.collected.add(ctx, b.jobs[0], &b.results[0])
	}
	return g.walkTree(ctx, &grepDir{name: info.Name, tree: tree})
}

// openTree opens the search base for the walk: through the provider's
// tree walk, or for a provider without one through its ReadDir and Open
// by name (namedTree).
func (g *grepRun) openTree(ctx context.Context) (files.Info, files.WalkTree, error) {
	if tw, ok := g.x.provider.(files.TreeWalker); ok {
		return tw.OpenTree(ctx, g.t.Target)
	}
	return openNamedTree(ctx, g.x, g.t)
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
		c, skipped, err := g.loadIgnore(ctx, g.base, dir, nil)
		if err != nil {
			return err
		}
		g.base = c
		g.ignoreSkip += skipped
	}
	return nil
}

// searchBatch searches a batch's files in order with sc, keeping at most limits.GrepKeepBytes of text for the whole batch (and
// the entry that passes it): once it is spent, the files after keep
// nothing, and the collector searches again for what the page needs.
func (g *grepRun) searchBatch(ctx context.Context, sc *scanner, b *grepBatch) {
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
		*fr = fileResult{}
		if err := ctx.Err(); err != nil {
			fr.err = fault.As(err)
		} else {
			fr.err = g.searchFile(ctx, sc, j, &o, fr)
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
	j.dir = nil // let go after the first search: open by name
	fr := &fileResult{}
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
	*fr = fileResult{name: fr.name, skipped: "unreadable"} // changed or vanished since it was listed
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
	res.Stopped = g.stopped
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
