package tools

import (
	"context"
	"strconv"
)

// collector takes file results in walk order and builds the page: the
// entries [offset, offset+head) that fit in the output bound, which the
// tool cuts further to leave room for its summary.
type collector struct {
	plan     *grepPlan
	research func(ctx context.Context, j grepJob, from, to, maxBytes int) (*fileResult, error)

	res      GrepResult
	out      []byte
	ends     []int // where in out each entry ends
	boundHit bool  // the output bound stopped the page
	// the file and last line of the entry shown last, for separators
	lastName string
	lastLine int
}

// add takes the result of searching the file of job j.
func (c *collector) add(ctx context.Context, j grepJob, fr *fileResult) error {
	if fr.err != nil {
		return fr.err
	}
	if fr.skipped != "" {
		c.res.FilesSkipped++
		return nil
	}
	c.res.FilesSearched++
	c.res.LongLines += fr.long
	if fr.count == 0 {
		return nil
	}
	c.res.FilesMatched++
	if c.plan.scan.mode == modeContent {
		return c.addLines(ctx, j, fr)
	}
	c.addFile(fr)
	return nil
}

// window returns which of the next n entries (local indexes lo..hi) the
// page wants, and counts them.
func (c *collector) window(n int) (lo, hi int) {
	start := c.res.Total
	c.res.Total += n
	lo = max(c.plan.offset, start) - start
	hi = min(c.plan.offset+c.plan.head, start+n) - start
	if c.boundHit || hi < lo {
		return 0, 0
	}
	return lo, hi
}

func (c *collector) addFile(fr *fileResult) {
	lo, hi := c.window(1)
	if lo >= hi {
		return
	}
	line := append([]byte(fr.name), '\n')
	if c.plan.scan.mode == modeCount {
		line = append(append(append([]byte(fr.name), ':'), strconv.Itoa(fr.count)...), '\n')
	}
	c.emit(line)
}

func (c *collector) addLines(ctx context.Context, j grepJob, fr *fileResult) error {
	lo, hi := c.window(fr.count)
	if lo >= hi {
		return nil
	}
	entries, text := fr.entries, fr.text
	if hi > len(entries) {
		again, err := c.research(ctx, j, lo, hi, c.plan.maxOutput-len(c.out)+1)
		if err != nil {
			return err
		}
		if again.skipped != "" {
			c.boundHit = true // changed since: stop the page here rather than guess
			return nil
		}
		entries, text = again.entries, again.text
	} else {
		entries = entries[lo:hi]
	}
	for _, e := range entries {
		piece := text[e.from:e.to]
		if c.plan.context && len(c.ends) > 0 && (c.lastName != fr.name || e.first > c.lastLine+1) {
			piece = append([]byte("--\n"), piece...)
		}
		if !c.emit(piece) {
			return nil
		}
		c.lastName, c.lastLine = fr.name, e.last
	}
	if len(entries) < hi-lo {
		c.boundHit = true
	}
	return nil
}

// emit appends one entry, or stops the page when it does not fit.
func (c *collector) emit(text []byte) bool {
	if len(c.out)+len(text) > c.plan.maxOutput {
		c.boundHit = true
		return false
	}
	c.out = append(c.out, text...)
	c.ends = append(c.ends, len(c.out))
	return true
}
