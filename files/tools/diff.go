package tools

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/capkit/capkit/limits"
)

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 2

// diffLineBytes cuts a long line in the diff.
const diffLineBytes = 240

// diffWriter renders the replacements of one or more edits as unified-diff
// hunks, at most limits.EditMaxDiffHunks of them and limits.DiffMaxBytes in
// all, counting what it leaves out. The changed span of each replacement is
// known, so no diff algorithm is needed: the hunk is the lines the old text
// spanned against the lines the new text spans. Memory is bounded by the
// diff's size whatever the sizes of the strings.
type diffWriter struct {
	name    string
	b       strings.Builder
	hunks   int
	omitted int
	full    bool
}

// add renders m's replacements in content (the content before m).
func (d *diffWriter) add(m editMatch, content []byte) {
	delta := 0 // line shift of the new content against the old so far
	line, lineAt := 1, 0
	for i, at := range m.at {
		if d.full || d.hunks == limits.EditMaxDiffHunks {
			d.omitted += m.count - i
			return
		}
		line += bytes.Count(content[lineAt:at], []byte{'\n'})
		lineAt = at
		h, shift, ok := m.hunk(content, at, line, delta, limits.DiffMaxBytes-d.b.Len())
		if !ok {
			d.full = true
			d.omitted += m.count - i
			return
		}
		d.b.WriteString(h)
		d.hunks++
		delta += shift
	}
	d.omitted += m.count - len(m.at)
}

// String is the diff with its header line.
func (d *diffWriter) String(replacements int) string {
	var b strings.Builder
	b.Grow(d.b.Len() + 160)
	b.WriteString("edited ")
	b.WriteString(d.name)
	b.WriteString(": ")
	b.WriteString(strconv.Itoa(replacements))
	if replacements == 1 {
		b.WriteString(" replacement\n")
	} else {
		b.WriteString(" replacements\n")
	}
	b.WriteString(d.b.String())
	if d.omitted > 0 {
		b.WriteString("… ")
		b.WriteString(strconv.Itoa(d.omitted))
		b.WriteString(" more replacements not shown (the diff shows at most ")
		b.WriteString(strconv.Itoa(limits.EditMaxDiffHunks))
		b.WriteString(" hunks and ")
		b.WriteString(strconv.Itoa(limits.DiffMaxBytes))
		b.WriteString(" bytes)\n")
	}
	return b.String()
}

// hunk renders the replacement at offset at (on line line of content) in
// at most budget bytes: the hunk, the lines it adds, and false when it does
// not fit.
func (m editMatch) hunk(content []byte, at, line, delta, budget int) (string, int, bool) {
	start := bytes.LastIndexByte(content[:at], '\n') + 1
	endOld := at + len(m.old)
	lineEnd := bytes.IndexByte(content[endOld:], '\n')
	if lineEnd < 0 {
		lineEnd = len(content)
	} else {
		lineEnd += endOld
	}
	before := lastLines(content[:start], diffContext)
	after := firstLines(content[min(lineEnd+1, len(content)):], diffContext)
	oldSpan := [][]byte{content[start:lineEnd]}
	// m.new is only read: no copy of it.
	newSpan := [][]byte{content[start:at], unsafe.Slice(unsafe.StringData(m.new), len(m.new)), content[endOld:lineEnd]}
	oldLines, newLines := countLines(oldSpan), countLines(newSpan)
	w := lineWriter{limit: budget}
	w.b.WriteString("@@ -")
	w.b.WriteString(strconv.Itoa(line - len(before)))
	w.b.WriteString(",")
	w.b.WriteString(strconv.Itoa(len(before) + oldLines + len(after)))
	w.b.WriteString(" +")
	w.b.WriteString(strconv.Itoa(line - len(before) + delta))
	w.b.WriteString(",")
	w.b.WriteString(strconv.Itoa(len(before) + newLines + len(after)))
	w.b.WriteString(" @@\n")
	for _, l := range before {
		w.span(' ', [][]byte{[]byte(l)})
	}
	w.span('-', oldSpan)
	w.span('+', newSpan)
	for _, l := range after {
		w.span(' ', [][]byte{[]byte(l)})
	}
	if w.over() {
		return "", 0, false
	}
	return w.b.String(), newLines - oldLines, true
}

// countLines counts the lines of the concatenation of parts.
func countLines(parts [][]byte) int {
	n := 1
	for _, p := range parts {
		n += bytes.Count(p, []byte{'\n'})
	}
	return n
}

// lineWriter writes marked diff lines, each cut at diffLineBytes, and
// stops writing once its builder holds more than limit bytes.
type lineWriter struct {
	b     strings.Builder
	limit int
}

func (w *lineWriter) over() bool { return w.b.Len() > w.limit }

// span writes the concatenation of parts as lines marked with mark.
func (w *lineWriter) span(mark byte, parts [][]byte) {
	col, cut := 0, false
	w.b.WriteByte(mark)
	for _, p := range parts {
		for len(p) > 0 && !w.over() {
			i := bytes.IndexByte(p, '\n')
			seg := p
			if i >= 0 {
				seg = bytes.TrimSuffix(p[:i], []byte{'\r'})
			}
			if !cut {
				take := min(len(seg), diffLineBytes-col)
				for take < len(seg) && take > 0 && !utf8.RuneStart(seg[take]) {
					take--
				}
				w.b.Write(seg[:take])
				col += take
				if take < len(seg) {
					w.b.WriteString(" … [cut]")
					cut = true
				}
			}
			if i < 0 {
				break
			}
			w.b.WriteString("\n")
			w.b.WriteByte(mark)
			col, cut, p = 0, false, p[i+1:]
		}
	}
	w.b.WriteByte('\n')
}

// lastLines returns up to n whole lines that end content (which ends at a
// line start).
func lastLines(content []byte, n int) []string {
	if len(content) == 0 {
		return nil
	}
	s := string(content[max(0, len(content)-4*diffLineBytes*n):])
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// firstLines returns up to n whole lines at the start of content.
func firstLines(content []byte, n int) []string {
	if len(content) == 0 {
		return nil
	}
	s := string(content[:min(len(content), 4*diffLineBytes*n)])
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	if l := len(lines); l > 0 && lines[l-1] == "" {
		lines = lines[:l-1]
	}
	return lines
}
