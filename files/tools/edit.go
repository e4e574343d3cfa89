package tools

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

var editDescription = fmt.Sprintf(`Replaces old_string with new_string in a file this session read with read_file and that is unchanged since; otherwise the result is a conflict and nothing changes (after an edit, the next needs no new read). old_string must match exactly, whitespace included, without read_file's line numbers, and occur once unless replace_all; otherwise nothing changes and the result says how often it occurs. In a CRLF file \n stands for \r\n. edits: up to %d {old_string, new_string, replace_all}, in order, all or none; dry_run shows the diff only. Files up to %s.`,
	limits.EditMaxEdits, limits.Bytes(limits.EditMaxFileBytes))

// EditArgs are edit_file's arguments: one change (OldString, NewString,
// ReplaceAll) or several (Edits).
type EditArgs struct {
	Path       string     `json:"path"`
	OldString  string     `json:"old_string,omitempty"`
	NewString  string     `json:"new_string,omitempty"`
	ReplaceAll bool       `json:"replace_all,omitempty"`
	Edits      []EditSpec `json:"edits,omitempty"`
	DryRun     bool       `json:"dry_run,omitempty"`
}

// EditSpec is one change of a multi-edit.
type EditSpec struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

// EditResult reports an edit; the diff is its text.
type EditResult struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
	Bytes        int    `json:"bytes"`
	// DryRun reports that nothing was written.
	DryRun bool `json:"dry_run,omitempty"`

	diff string
}

func (r EditResult) ToolText() string { return r.diff }

// specs returns the changes in, checked before the file is read.
func (in EditArgs) specs() ([]EditSpec, error) {
	specs := in.Edits
	if len(specs) == 0 {
		specs = []EditSpec{{OldString: in.OldString, NewString: in.NewString, ReplaceAll: in.ReplaceAll}}
	} else if in.OldString != "" || in.NewString != "" || in.ReplaceAll {
		return nil, fault.New(fault.InvalidInput, "give either old_string/new_string or edits, not both")
	}
	if len(specs) > limits.EditMaxEdits {
		return nil, fault.LimitExceeded("edits", limits.EditMaxEdits, int64(len(specs)))
	}
	for i, s := range specs {
		var err error
		switch {
		case s.OldString == "":
			err = fault.New(fault.InvalidInput, "%sold_string is empty; to create or replace a whole file use write_file", editLabel(i, len(specs)))
		case s.OldString == s.NewString:
			err = fault.New(fault.InvalidInput, "%sold_string and new_string are identical; there is nothing to change", editLabel(i, len(specs)))
		case len(s.OldString) > limits.EditMaxFileBytes:
			err = fault.LimitExceeded("old_string bytes", limits.EditMaxFileBytes, int64(len(s.OldString)))
		case len(s.NewString) > limits.EditMaxFileBytes:
			// It could never fit in the file.
			err = fault.LimitExceeded("new_string bytes", limits.EditMaxFileBytes, int64(len(s.NewString)))
		}
		if err != nil {
			return nil, err
		}
	}
	return specs, nil
}

// editLabel names edit i of n in a message ("" for a single edit).
func editLabel(i, n int) string {
	if n == 1 {
		return ""
	}
	return "edit " + strconv.Itoa(i+1) + " of " + strconv.Itoa(n) + ": "
}

func (x *executor) editFile(ctx context.Context, req request, in EditArgs) (EditResult, error) {
	specs, err := in.specs()
	if err != nil {
		return EditResult{}, err
	}
	t, err := x.resolveChange(req.caps, capability.EditFile, in.Path)
	if err != nil {
		return EditResult{}, err
	}
	defer t.Close()
	data, cur, err := x.provider.ReadAll(ctx, t.Target, limits.EditMaxFileBytes)
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
	out, leases, res, err := applyEdits(ctx, data, specs, t.display)
	// The new content lives only until Write returns: its buffers are
	// reused, so an edit neither zeroes a fresh buffer nor causes the
	// collections it would (BenchmarkEditFile1MiB).
	defer leases.release()
	if err != nil {
		return EditResult{}, err
	}
	res.Path, res.Bytes, res.DryRun = t.display, len(out), in.DryRun
	if in.DryRun {
		res.diff = "dry run, nothing written: " + res.diff
		return res, nil
	}
	v, err := x.provider.Write(ctx, t.Target, out, &files.WriteOptions{Guard: e.Guard.Enabled, Expect: e.Guard.Version})
	if err != nil {
		return EditResult{}, err
	}
	x.events.Observed(ctx, files.Observation{Session: e.Session, Op: files.OpEdit, Root: t.root, Name: t.name, Version: v})
	return res, nil
}

// applyEdits applies specs in order to content in memory: the new content
// and the result's replacements and diff, or the first failure (then
// nothing is to be written). Each intermediate content is sized and
// checked against limits.EditMaxFileBytes before it is allocated. The
// contents are built in leased buffers; release the leases once the new
// content is no longer used.
func applyEdits(ctx context.Context, content []byte, specs []EditSpec, name string) ([]byte, outLeases, EditResult, error) {
	var res EditResult
	var leases outLeases
	d := diffWriter{name: name}
	for i, s := range specs {
		m, err := matchEdit(content, s.OldString, s.NewString, s.ReplaceAll)
		if err != nil {
			return nil, leases, EditResult{}, fault.New(fault.InvalidInput, "%s: %s%s", name, editLabel(i, len(specs)), err.Error())
		}
		size := m.size(len(content))
		if size > limits.EditMaxFileBytes {
			return nil, leases, EditResult{}, fault.LimitExceeded(name+": "+editLabel(i, len(specs))+"edited file bytes", limits.EditMaxFileBytes, size)
		}
		buf, lease := leaseOut(int(size))
		leases = append(leases, lease)
		next, err := m.apply(ctx, buf, content)
		if err != nil {
			return nil, leases, EditResult{}, err
		}
		d.add(m, content)
		content = next
		res.Replacements += m.count
	}
	res.diff = d.String(res.Replacements)
	return content, leases, res, nil
}

// outLeases are the leases of an edit's buffers.
type outLeases []outLease

func (ls outLeases) release() {
	for _, l := range ls {
		l.release()
	}
}

// editMatch is a planned replacement: the strings as matched (line endings
// adapted to the file), how many times old occurs, and the offsets of the
// first occurrences (as many as the diff may show).
type editMatch struct {
	old, new string
	count    int
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
		m.count = bytes.Count(content, []byte(m.old))
	}
	if m.count == 0 {
		m = editMatch{old: old, new: new}
		if isCRLF(content) {
			m.new = toCRLF(new)
		}
		m.count = bytes.Count(content, []byte(m.old))
	}
	switch n := m.count; {
	case n == 0:
		return editMatch{}, matchError("old_string was not found; copy it exactly from read_file's output (without the line numbers), whitespace and line breaks included")
	case n > 1 && !all:
		return editMatch{}, matchError("old_string occurs " + strconv.Itoa(n) + " times; include more surrounding text to make it unique, or set replace_all to replace every occurrence")
	}
	if m.old == m.new {
		return editMatch{}, matchError("old_string and new_string are identical in this file's line endings; there is nothing to change")
	}
	m.at = firstOccurrences(content, m.old, limits.EditMaxDiffHunks+1)
	return m, nil
}

// firstOccurrences returns the offsets of the first n non-overlapping
// occurrences of s.
func firstOccurrences(content []byte, s string, n int) []int {
	at := make([]int, 0, min(n, 8))
	for i := 0; len(at) < n; {
		j := bytes.Index(content[i:], []byte(s))
		if j < 0 {
			break
		}
		at = append(at, i+j)
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

// size is the length of the content after the replacements, computed in
// int64 so that no product of input sizes overflows.
func (m editMatch) size(n int) int64 {
	return int64(n) + int64(m.count)*(int64(len(m.new))-int64(len(m.old)))
}

// applyCheckEvery is how many replacements apply makes between checks of
// the context.
const applyCheckEvery = 1 << 16

// apply appends the new content to out, which the caller sized for it.
func (m editMatch) apply(ctx context.Context, out, content []byte) ([]byte, error) {
	old := []byte(m.old)
	prev := 0
	for n := 1; ; n++ {
		j := bytes.Index(content[prev:], old)
		if j < 0 {
			break
		}
		out = append(out, content[prev:prev+j]...)
		out = append(out, m.new...)
		prev += j + len(old)
		if n%applyCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fault.As(err)
			}
		}
	}
	return append(out, content[prev:]...), nil
}
