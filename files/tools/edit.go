package tools

import (
	"bytes"
	"context"
	"strconv"
	"strings"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

const editDescription = `Replaces old_string with new_string in a file this session has read with read_file and that has not changed since (else the result is a conflict and nothing is changed; after a successful edit the next edit needs no new read). old_string must match the file exactly (whitespace included, without read_file's line numbers) and occur exactly once, unless replace_all is true; otherwise the result says how many times it occurs and nothing is changed. old_string and new_string must differ. In a file with CRLF line endings, \n in both strings stands for \r\n. The file is at most 16 MiB; the change is atomic and the result shows a short diff (at most 8 KiB).
Example: {"path": "src/main.go", "old_string": "func old() {", "new_string": "func renamed() {"}`

// EditArgs are edit_file's arguments.
type EditArgs struct {
	Path       string `json:"path" jsonschema:"the file: relative to the first root where editing is granted, or absolute inside one"`
	OldString  string `json:"old_string" jsonschema:"the exact text to replace"`
	NewString  string `json:"new_string" jsonschema:"the text to put in its place"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence (default false: old_string must be unique)"`
}

// EditResult reports an edit; the diff is its text.
type EditResult struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
	Bytes        int    `json:"bytes"`

	diff string
}

func (r EditResult) ToolText() string { return r.diff }

func (x *executor) editFile(ctx context.Context, req request, in EditArgs) (EditResult, error) {
	switch {
	case in.OldString == "":
		return EditResult{}, fault.New(fault.InvalidInput, "old_string is empty; to create or replace a whole file use write_file")
	case in.OldString == in.NewString:
		return EditResult{}, fault.New(fault.InvalidInput, "old_string and new_string are identical; there is nothing to change")
	}
	t, err := resolve(req.caps, capability.EditFile, in.Path)
	if err != nil {
		return EditResult{}, err
	}
	data, cur, err := x.provider.ReadAll(ctx, t.root, t.name, limits.EditMaxFileBytes)
	if err != nil {
		return EditResult{}, err
	}
	e := &files.Expectation{
		Session: req.session, Op: files.OpEdit, Root: t.root, Name: t.name,
		Exists: true, Current: cur, Guard: files.Guard{Enabled: true, Version: cur},
	}
	if err := x.events.ExpectEdit(ctx, e); err != nil {
		return EditResult{}, err
	}
	m, err := matchEdit(data, in.OldString, in.NewString, in.ReplaceAll)
	if err != nil {
		return EditResult{}, fault.New(fault.InvalidInput, "%s: %s", t.display, err.Error())
	}
	out := m.apply(data)
	if len(out) > limits.EditMaxFileBytes {
		return EditResult{}, fault.LimitExceeded(t.display+": edited file bytes", limits.EditMaxFileBytes, int64(len(out)))
	}
	v, err := x.provider.Write(ctx, t.root, t.name, out, &files.WriteOptions{Guard: e.Guard.Enabled, Expect: e.Guard.Version})
	if err != nil {
		return EditResult{}, err
	}
	x.events.Observed(ctx, files.Observation{Session: e.Session, Op: files.OpEdit, Root: t.root, Name: t.name, Version: v})
	return EditResult{Path: t.display, Replacements: len(m.at), Bytes: len(out), diff: m.diff(t.display, data)}, nil
}

// editMatch is a planned replacement: the strings as matched (line endings
// adapted to the file) and the byte offsets of the occurrences.
type editMatch struct {
	old, new string
	at       []int
}

// matchError is a refusal of the edit matcher; its text is shown to the
// caller after the file name.
type matchError string

func (e matchError) Error() string { return string(e) }

// matchEdit plans replacing old with new in content. In a file whose first
// line ends with \r\n, lone \n in old and new become \r\n first, so CRLF
// files stay CRLF; if that finds nothing, the strings are tried as given
// (a file with mixed line endings). Occurrences do not overlap. Unless all
// is set, old must occur exactly once.
func matchEdit(content []byte, old, new string, all bool) (editMatch, error) {
	if old == "" {
		return editMatch{}, matchError("old_string is empty")
	}
	var m editMatch
	if isCRLF(content) && strings.Contains(old, "\n") {
		m = editMatch{old: toCRLF(old), new: toCRLF(new)}
		m.at = occurrences(content, m.old, all)
	}
	if len(m.at) == 0 {
		m = editMatch{old: old, new: new}
		if isCRLF(content) {
			m.new = toCRLF(new)
		}
		m.at = occurrences(content, m.old, all)
	}
	switch n := len(m.at); {
	case n == 0:
		return editMatch{}, matchError("old_string was not found; copy it exactly from read_file's output (without the line numbers), whitespace and line breaks included")
	case n > 1 && !all:
		return editMatch{}, matchError("old_string occurs " + strconv.Itoa(n) + " times; include more surrounding text to make it unique, or set replace_all to replace every occurrence")
	}
	if m.old == m.new {
		return editMatch{}, matchError("old_string and new_string are identical in this file's line endings; there is nothing to change")
	}
	return m, nil
}

// occurrences returns the offsets of non-overlapping occurrences of s; when
// all is false it stops after the second, which is enough to refuse.
func occurrences(content []byte, s string, all bool) []int {
	var at []int
	for i := 0; i <= len(content)-len(s); {
		j := bytes.Index(content[i:], []byte(s))
		if j < 0 {
			break
		}
		at = append(at, i+j)
		if !all && len(at) == 2 {
			// count the rest only to say how many there are
			rest := i + j + len(s)
			return append(at, make([]int, bytes.Count(content[rest:], []byte(s)))...)
		}
		i += j + len(s)
	}
	return at
}

func isCRLF(content []byte) bool {
	i := bytes.IndexByte(content, '\n')
	return i > 0 && content[i-1] == '\r'
}

// toCRLF turns each \n not preceded by \r into \r\n.
func toCRLF(s string) string {
	if !strings.Contains(s, "\n") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + strings.Count(s, "\n"))
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && (i == 0 || s[i-1] != '\r') {
			b.WriteByte('\r')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// apply builds the new content in one buffer.
func (m editMatch) apply(content []byte) []byte {
	out := make([]byte, 0, len(content)+len(m.at)*(len(m.new)-len(m.old)))
	prev := 0
	for _, at := range m.at {
		out = append(out, content[prev:at]...)
		out = append(out, m.new...)
		prev = at + len(m.old)
	}
	return append(out, content[prev:]...)
}

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 2

// diffLineBytes cuts a long line in the diff.
const diffLineBytes = 240

// diff renders the replacements as unified-diff hunks, at most
// limits.EditMaxDiffHunks of them and limits.DiffMaxBytes in all, saying
// what it leaves out. The changed span of each replacement is known, so no
// diff algorithm is needed: the hunk is the lines the old text spanned
// against the lines the new text spans.
func (m editMatch) diff(name string, content []byte) string {
	var b strings.Builder
	b.WriteString("edited ")
	b.WriteString(name)
	b.WriteString(": ")
	b.WriteString(strconv.Itoa(len(m.at)))
	if len(m.at) == 1 {
		b.WriteString(" replacement\n")
	} else {
		b.WriteString(" replacements\n")
	}
	delta := 0 // line shift of the new file against the old so far
	line, lineAt := 1, 0
	shown := 0
	for i, at := range m.at {
		line += bytes.Count(content[lineAt:at], []byte{'\n'})
		lineAt = at
		if shown == limits.EditMaxDiffHunks || b.Len() >= limits.DiffMaxBytes {
			b.WriteString("… ")
			b.WriteString(strconv.Itoa(len(m.at) - i))
			b.WriteString(" more replacements not shown\n")
			break
		}
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
		oldSpan := string(content[start:lineEnd])
		newSpan := string(content[start:at]) + m.new + string(content[endOld:lineEnd])
		oldLines := splitLines(oldSpan)
		newLines := splitLines(newSpan)
		var h strings.Builder
		h.WriteString("@@ -")
		h.WriteString(strconv.Itoa(line - len(before)))
		h.WriteString(",")
		h.WriteString(strconv.Itoa(len(before) + len(oldLines) + len(after)))
		h.WriteString(" +")
		h.WriteString(strconv.Itoa(line - len(before) + delta))
		h.WriteString(",")
		h.WriteString(strconv.Itoa(len(before) + len(newLines) + len(after)))
		h.WriteString(" @@\n")
		for _, l := range before {
			writeDiffLine(&h, ' ', l)
		}
		for _, l := range oldLines {
			writeDiffLine(&h, '-', l)
		}
		for _, l := range newLines {
			writeDiffLine(&h, '+', l)
		}
		for _, l := range after {
			writeDiffLine(&h, ' ', l)
		}
		delta += len(newLines) - len(oldLines)
		if b.Len()+h.Len() > limits.DiffMaxBytes {
			b.WriteString("… ")
			b.WriteString(strconv.Itoa(len(m.at) - i))
			b.WriteString(" more replacements not shown (the diff would exceed ")
			b.WriteString(strconv.Itoa(limits.DiffMaxBytes))
			b.WriteString(" bytes)\n")
			break
		}
		b.WriteString(h.String())
		shown++
	}
	return b.String()
}

func writeDiffLine(b *strings.Builder, mark byte, l string) {
	l = strings.TrimSuffix(l, "\r")
	b.WriteByte(mark)
	if len(l) > diffLineBytes {
		cut := diffLineBytes
		for cut > 0 && l[cut]&0xC0 == 0x80 {
			cut--
		}
		b.WriteString(l[:cut])
		b.WriteString(" … [cut]")
	} else {
		b.WriteString(l)
	}
	b.WriteByte('\n')
}

func splitLines(s string) []string { return strings.Split(s, "\n") }

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
