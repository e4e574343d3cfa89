package tools

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/linedfa"
	"github.com/capkit/capkit/limits"
)

// grepMode is what grep reports.
type grepMode int

const (
	modeContent grepMode = iota // matching lines
	modeFiles                   // names of files with a match
	modeCount                   // matching lines per file
)

// entry is one matching line (or multiline match) with its context, as
// text in fileResult.text.
type entry struct {
	from, to    int // bytes of fileResult.text
	first, last int // line numbers shown
}

// fileResult is what searching one file found: every match counted, the
// entries [keepFrom, keepFrom+len(entries)) kept as text.
type fileResult struct {
	err     error  // the call's failure, if searching this file met one
	name    string // as shown
	count   int
	entries []entry
	text    []byte
	// full is set when the kept entries stopped at the byte bound before
	// the wanted window ended.
	full bool
	long int // lines searched in pieces
	// skipped is why the file was not searched ("" if it was).
	skipped string
}

// scanOpts say how one file is searched and what of it is kept.
type scanOpts struct {
	m            *matcher
	mode         grepMode
	before       int
	after        int
	multiline    bool
	unnumbered   bool
	keepFrom     int // first entry to keep (local index)
	keepTo       int // one past the last
	maxKeepBytes int
}

// binaryProbeBytes is the first read of a file: enough to see the NUL
// that marks it binary (in its first 8000 bytes, as git and GNU grep
// look), without reading a whole buffer of a large binary.
const binaryProbeBytes = 64 * 1024

// scanner searches files through one reused buffer.
type scanner struct {
	buf []byte
	dfa *linedfa.Searcher // of the last matcher searched with
	src sizedReader       // of the file being searched
}

// sizedReader reads r from its start up to size bytes: an
// io.SectionReader kept in the scanner, not allocated per file.
type sizedReader struct {
	r         io.ReaderAt
	off, size int64
}

func (s *sizedReader) Read(b []byte) (int, error) {
	if s.off >= s.size {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), s.size-s.off)]
	n, err := s.r.ReadAt(b, s.off)
	s.off += int64(n)
	return n, err
}

func newScanner() *scanner {
	return &scanner{buf: make([]byte, limits.GrepChunkBytes)}
}

// fileState is the printing state of one file being streamed.
type fileState struct {
	o   *scanOpts
	res *fileResult
	// line counting: the line starting at byte cntPos of the buffer has
	// number cntLine.
	cntPos, cntLine int
	// last is the last line number shown; afterLeft the after-context
	// lines still owed, afterLimit the bound of the current entry.
	last      int
	afterLeft int
	cur       *entry // the entry being written, if kept
	stop      bool   // files mode: the first match decides
	dfa       *linedfa.Searcher
}

// search streams r through the buffer. A line longer than the buffer is
// searched in pieces of the buffer's size.
func (sc *scanner) search(ctx context.Context, r io.Reader, o *scanOpts, res *fileResult) error {
	sc.dfa = o.m.searcher(sc.dfa)
	st := &fileState{o: o, res: res, cntLine: 1, dfa: sc.dfa}
	buf := sc.buf
	n, scanFrom := 0, 0 // valid bytes, first unsearched
	eof, first, inLong := false, true, false
	for {
		if err := ctx.Err(); err != nil {
			return fault.As(err)
		}
		if !eof && n < len(buf) {
			limit := len(buf)
			if first {
				limit = min(limit, binaryProbeBytes) // most binary files end here
			}
			m, err := io.ReadFull(r, buf[n:limit])
			n += m
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				eof = true
			} else if err != nil {
				return err
			}
		}
		if first {
			first = false
			if bytes.IndexByte(buf[:min(n, 8000)], 0) >= 0 {
				res.skipped = "binary"
				return nil
			}
			// Fill the buffer before searching, but in files mode search
			// the probe's whole lines first: a match there decides.
			if !eof && (o.mode != modeFiles || bytes.IndexByte(buf[:n], '\n') < 0) {
				continue
			}
		}
		end := n
		if !eof {
			if i := bytes.LastIndexByte(buf[scanFrom:n], '\n'); i >= 0 {
				end = scanFrom + i + 1
				inLong = false
			} else if scanFrom > 0 {
				st.shift(buf, scanFrom, n) // drop the context kept, to make room
				n, scanFrom = n-scanFrom, 0
				continue
			} else if !inLong {
				res.long++ // the line fills the buffer: search it in pieces
				inLong = true
			}
		}
		st.segment(ctx, buf[:end], scanFrom)
		if err := ctx.Err(); err != nil {
			return fault.As(err) // the segment ended early: its counts are not whole
		}
		st.flushAfter(buf[:end], end)
		if st.stop || (eof && end == n) {
			return nil
		}
		scanFrom = end
		keep := contextStart(buf[:scanFrom], scanFrom, o.before, len(buf)/2)
		st.shift(buf, keep, n)
		n, scanFrom = n-keep, scanFrom-keep
	}
}

// contextStart returns where the last want lines before at start, not
// keeping more than most bytes.
func contextStart(b []byte, at, want, most int) int {
	start := at
	for range want {
		if start == 0 {
			break
		}
		i := bytes.LastIndexByte(b[:start-1], '\n')
		if at-(i+1) > most {
			break
		}
		start = i + 1
	}
	return start
}

// shift moves buf[from:to] to the front and rebases the line counter; the
// lines dropped are counted first.
func (st *fileState) shift(buf []byte, from, to int) {
	st.countTo(buf, from)
	copy(buf, buf[from:to])
	st.cntPos -= from
}

// countTo advances the line counter to byte at.
func (st *fileState) countTo(buf []byte, at int) {
	if at > st.cntPos {
		st.cntLine += bytes.Count(buf[st.cntPos:at], []byte{'\n'})
		st.cntPos = at
	}
}

// segment searches the whole lines data[from:] (data[:from] is retained
// context).
func (st *fileState) segment(ctx context.Context, data []byte, from int) {
	seg := data[from:]
	st.o.m.lines(ctx, seg, st.dfa, func(start, end int) bool {
		st.hit(data, from+start, from+end)
		return !st.stop
	})
}

// hit records the matching line data[start:end].
func (st *fileState) hit(data []byte, start, end int) {
	res := st.res
	idx := res.count
	res.count++
	if st.o.mode == modeFiles {
		st.stop = true
		return
	}
	if st.o.mode == modeCount {
		return
	}
	st.flushAfter(data, start)
	st.countTo(data, start)
	line := st.cntLine
	st.cur = nil
	if idx >= st.o.keepFrom && idx < st.o.keepTo && !res.full {
		st.cur = &entry{from: len(res.text), first: line}
		st.beforeContext(data, start, line)
		st.writeLine(line, data[start:end], ':')
		st.last = line
		st.closeEntry()
	}
	st.last = line
	st.afterLeft = st.o.after
}

// beforeContext writes the lines before the match at start that were not
// shown yet.
func (st *fileState) beforeContext(data []byte, start, line int) {
	want := min(st.o.before, line-1-st.last)
	if want <= 0 {
		return
	}
	from := contextStart(data, start, want, len(data))
	got := bytes.Count(data[from:start], []byte{'\n'})
	st.cur.first = line - got
	for l := line - got; from < start; l++ {
		i := bytes.IndexByte(data[from:start], '\n')
		st.writeLine(l, data[from:from+i], '-')
		from += i + 1
	}
}

// flushAfter writes the after-context lines owed, up to byte upTo.
func (st *fileState) flushAfter(data []byte, upTo int) {
	if st.afterLeft == 0 || st.o.mode != modeContent {
		return
	}
	from := st.lineAfterLast(data)
	if from < 0 {
		return
	}
	for st.afterLeft > 0 && from < upTo {
		end := upTo
		if i := bytes.IndexByte(data[from:upTo], '\n'); i >= 0 {
			end = from + i
		}
		st.last++
		st.afterLeft--
		if st.cur != nil {
			st.writeLine(st.last, data[from:end], '-')
			st.closeEntry()
		}
		from = end + 1
	}
}

// lineAfterLast returns the offset of the line after the last one shown,
// found by counting from the line counter.
func (st *fileState) lineAfterLast(data []byte) int {
	pos, line := st.cntPos, st.cntLine
	for line <= st.last {
		i := bytes.IndexByte(data[pos:], '\n')
		if i < 0 {
			return -1
		}
		pos += i + 1
		line++
	}
	st.cntPos, st.cntLine = pos, line
	return pos
}

// closeEntry appends the current entry (or extends the last one with its
// after-context).
func (st *fileState) closeEntry() {
	res := st.res
	e := *st.cur
	e.to, e.last = len(res.text), st.last
	if k := len(res.entries); k > 0 && res.entries[k-1].from == e.from {
		res.entries[k-1] = e
	} else {
		res.entries = append(res.entries, e)
	}
	if len(res.text) > st.o.maxKeepBytes {
		res.full = true
		st.cur = nil
	}
}

// writeLine appends "name:line:text" (sep - for context), the text cut at
// limits.GrepMaxLineRunes.
func (st *fileState) writeLine(line int, text []byte, sep byte) {
	if st.o.unnumbered {
		line = 0
	}
	st.res.text = appendLine(st.res.text, st.res.name, line, text, sep)
}

func appendLine(out []byte, name string, line int, text []byte, sep byte) []byte {
	text = bytes.TrimSuffix(text, []byte{'\r'})
	out = append(out, name...)
	out = append(out, sep)
	if line > 0 {
		out = strconv.AppendInt(out, int64(line), 10)
		out = append(out, sep)
	}
	cut := false
	if i := runeIndex(text, limits.GrepMaxLineRunes); i >= 0 {
		text, cut = text[:i], true
	}
	if utf8.Valid(text) {
		out = append(out, text...)
	} else {
		out = append(out, strings.ToValidUTF8(string(text), "\uFFFD")...)
	}
	if cut {
		out = append(out, " … [cut]"...)
	}
	return append(out, '\n')
}

// multiline reports each match of the regexp over the whole text, with
// the lines it spans.
func (st *fileState) multiline(data []byte) {
	if ex := st.o.m.exact; ex != nil {
		if c := ex.Cursor(); c.Next(data) < 0 {
			return
		}
	}
	pos, re := 0, st.o.m.re
	for pos < len(data) {
		if pos > 0 && st.o.m.cont != nil {
			re = st.o.m.cont // data[pos:] is not the text's start
		}
		loc := re.FindIndex(data[pos:])
		if loc == nil {
			return
		}
		start, end := pos+loc[0], pos+loc[1]
		lineStart := bytes.LastIndexByte(data[:start], '\n') + 1
		lineEnd := len(data)
		if end > start && data[end-1] == '\n' {
			end--
		}
		if i := bytes.IndexByte(data[end:], '\n'); i >= 0 {
			lineEnd = end + i
		}
		st.multilineHit(data, lineStart, lineEnd)
		if st.stop {
			return
		}
		pos = lineEnd + 1
	}
}

// multilineHit records the match spanning the lines data[start:end].
func (st *fileState) multilineHit(data []byte, start, end int) {
	res := st.res
	idx := res.count
	res.count++
	switch {
	case st.o.mode == modeFiles:
		st.stop = true
		return
	case st.o.mode == modeCount:
		return
	}
	st.flushAfter(data, start)
	st.countTo(data, start)
	line := st.cntLine
	st.cur = nil
	if idx >= st.o.keepFrom && idx < st.o.keepTo && !res.full {
		st.cur = &entry{from: len(res.text), first: line}
		st.beforeContext(data, start, line)
		for l, from := line, start; from <= end; l++ {
			i := bytes.IndexByte(data[from:end], '\n')
			if i < 0 {
				i = end - from
			}
			st.writeLine(l, data[from:from+i], ':')
			st.last = l
			from += i + 1
		}
		st.closeEntry()
	}
	st.last = line + bytes.Count(data[start:end], []byte{'\n'})
	st.afterLeft = st.o.after
}

// searchWhole searches data as one text (multiline mode).
func searchWhole(data []byte, o *scanOpts, res *fileResult) {
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
		res.skipped = "binary"
		return
	}
	st := &fileState{o: o, res: res, cntLine: 1}
	st.multiline(data)
	st.flushAfter(data, len(data))
}
