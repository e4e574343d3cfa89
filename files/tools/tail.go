package tools

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

// readTail shows the last n lines of f. A file of at most
// limits.ReadVersionMaxBytes is counted first (one pass, which also gives
// its version), so its lines keep their numbers; a larger one is read only
// backwards from its end, in blocks, and its lines are numbered from the
// first one shown.
func readTail(ctx context.Context, req request, t target, f files.File, n int) (ReadResult, error) {
	size := f.Info().Size
	total, counted := 0, size <= limits.ReadVersionMaxBytes
	if counted {
		var err error
		if total, err = countFileLines(ctx, f, t.display); err != nil {
			return ReadResult{}, err
		}
	}
	budget := readBudget(req.maxOutput, t.display)
	ts, err := tailStart(ctx, f, size, n, budget, t.display)
	if errors.Is(err, errLastLineTooLarge) {
		return ReadResult{}, req.tooLarge(t.display+": the last line", "a line is never shown in part")
	}
	if err != nil {
		return ReadResult{}, err
	}
	w := newWindow(1, max(ts.lines, 1), req, size-ts.start, budget)
	w.countAll = true // the section is the window
	w.numBase, w.unnumbered = total-ts.lines, !counted
	w.tail = &ts
	w.tail.counted = counted
	return w.result(ctx, io.NewSectionReader(f, ts.start, size-ts.start), t.display)
}

// tailSpan is where a tail read starts and why it shows fewer lines than
// asked.
type tailSpan struct {
	start   int64 // byte offset of the first line shown
	lines   int   // lines from there to the end
	fitted  bool  // more lines would not fit the output bound
	scanned bool  // the scan stopped at limits.ReadTailMaxScanBytes
	counted bool  // the file's lines were counted
}

// tailStart reads f backwards from its end, a block at a time, to find the
// start of its last n lines, as many of them as the rendered window can
// hold in budget bytes (a shown line takes at most its bytes, or its cut
// length, plus its number and marker).
func tailStart(ctx context.Context, f io.ReaderAt, size int64, n int, budget int64, name string) (tailSpan, error) {
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	buf := (*bp)[:min(len(*bp), limits.ReadTailBlockBytes)]
	ts := tailSpan{start: size}
	lineEnd, cost := size, int64(0) // the end of the earliest line taken
	// take accepts the line [from, lineEnd), reporting whether to go on.
	take := func(from int64) bool {
		c := min(lineEnd-from, 4*limits.ReadMaxLineRunes+64) + 16
		if cost+c > budget {
			ts.fitted = true
			return false
		}
		cost += c
		ts.lines++
		ts.start, lineEnd = from, from
		return ts.lines < n
	}
	for pos := size; pos > 0; {
		if size-pos >= limits.ReadTailMaxScanBytes {
			ts.scanned = true
			break
		}
		if err := ctx.Err(); err != nil {
			return tailSpan{}, fault.As(err)
		}
		blk := buf[:min(int64(len(buf)), pos)]
		pos -= int64(len(blk))
		if _, err := f.ReadAt(blk, pos); err != nil && err != io.EOF {
			return tailSpan{}, err
		}
		for j := len(blk); ; {
			j = bytes.LastIndexByte(blk[:j], '\n')
			if j < 0 {
				break
			}
			if p := pos + int64(j); p != size-1 && !take(p+1) {
				return ts.check(name, blk[j+1:], pos+int64(j+1))
			}
		}
		// The whole block is the lines taken or the one being scanned.
		if i := bytes.IndexByte(blk, 0); i >= 0 {
			return tailSpan{}, binaryFault(name, pos+int64(i))
		}
		if pos == 0 && lineEnd > 0 && !take(0) {
			break
		}
	}
	return ts.check(name, nil, 0)
}

// errLastLineTooLarge: a tail's last line does not fit the output bound
// alone (the caller says how to raise it).
var errLastLineTooLarge = errors.New("the last line does not fit the output bound")

// check refuses a tail whose bytes seen (seen, at offset off) are binary,
// or that found no whole line to show.
func (ts tailSpan) check(name string, seen []byte, off int64) (tailSpan, error) {
	if i := bytes.IndexByte(seen, 0); i >= 0 {
		return tailSpan{}, binaryFault(name, off+int64(i))
	}
	if ts.lines == 0 && ts.start > 0 {
		if ts.scanned {
			return tailSpan{}, fault.New(fault.Limit, "%s: the last line is longer than %d bytes; read it with offset and limit", name, limits.ReadTailMaxScanBytes)
		}
		return tailSpan{}, errLastLineTooLarge
	}
	return ts, nil
}

// countFileLines reads f to its end through Read (so that it learns its
// version) and counts its lines, refusing binary content.
func countFileLines(ctx context.Context, f io.Reader, name string) (int, error) {
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	lines, read, last := 0, int64(0), byte('\n')
	for {
		n, err := f.Read(*bp)
		if n > 0 {
			c := (*bp)[:n]
			if i := bytes.IndexByte(c, 0); i >= 0 {
				return 0, binaryFault(name, read+int64(i))
			}
			lines += bytes.Count(c, []byte{'\n'})
			read, last = read+int64(n), c[n-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		if err := ctx.Err(); err != nil {
			return 0, fault.As(err)
		}
	}
	if last != '\n' {
		lines++
	}
	return lines, nil
}

// tailFooter says which of the file's last lines a tail shows.
func (w *window) tailFooter(r ReadResult) []byte {
	ts := w.tail
	shown := r.UnnumberedLines
	if ts.counted {
		shown = r.EndLine - r.StartLine + 1
	}
	o := append(w.out, "(the last "...)
	o = strconv.AppendInt(o, int64(shown), 10)
	o = append(o, " lines"...)
	if ts.counted {
		o = append(o, ": lines "...)
		o = strconv.AppendInt(o, int64(r.StartLine), 10)
		o = append(o, "–"...)
		o = strconv.AppendInt(o, int64(r.EndLine), 10)
		o = append(o, " of "...)
		o = strconv.AppendInt(o, int64(r.TotalLines), 10)
	} else {
		o = append(o, " of a file of "...)
		o = append(o, sizeText(w.size+ts.start)...)
		o = append(o, ", from byte offset "...)
		o = strconv.AppendInt(o, ts.start, 10)
		o = append(o, "; the file is too large to count its lines, so they are shown without line numbers"...)
	}
	switch {
	case ts.fitted:
		o = append(o, "; earlier lines do not fit the output bound of "...)
		o = strconv.AppendInt(o, w.req.maxOutput, 10)
		o = append(o, " bytes"...)
	case ts.scanned:
		o = append(o, "; the lines before are more than "...)
		o = append(o, sizeText(limits.ReadTailMaxScanBytes)...)
		o = append(o, " from the end"...)
	}
	if r.CutLines > 0 {
		o = append(o, "; "...)
		o = strconv.AppendInt(o, int64(r.CutLines), 10)
		o = append(o, " lines longer than "...)
		o = strconv.AppendInt(o, limits.ReadMaxLineRunes, 10)
		o = append(o, " characters were cut, marked [cut: …]"...)
	}
	return append(o, ")\n"...)
}
