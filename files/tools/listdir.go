package tools

import (
	"context"
	iofs "io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

// ListArgs are list_dir's arguments.
type ListArgs struct {
	Path    string `json:"path,omitempty"`
	Offset  int    `json:"offset,omitempty"`
	Limit   int    `json:"limit,omitempty"`
	Details bool   `json:"details,omitempty"`
}

// ListResult reports a listing; the entries are its text.
type ListResult struct {
	Path     string `json:"path"`
	Offset   int    `json:"offset"`
	Shown    int    `json:"shown"`
	Total    int    `json:"total"`
	NotShown int    `json:"not_shown"`
	// NextOffset continues the listing; 0 when it is complete.
	NextOffset int `json:"next_offset,omitempty"`

	text string
}

func (r ListResult) ToolText() string { return r.text }

func (in ListArgs) window() (offset, limit int, err error) {
	switch {
	case in.Offset < 0 || in.Limit < 0:
		return 0, 0, fault.New(fault.InvalidInput, "offset and limit must not be negative")
	case in.Offset > limits.ListMaxOffset:
		return 0, 0, fault.LimitExceeded("offset (entries)", limits.ListMaxOffset, int64(in.Offset))
	case in.Limit > limits.ListMaxEntries:
		return 0, 0, fault.LimitExceeded("limit (entries)", limits.ListMaxEntries, int64(in.Limit))
	}
	limit = in.Limit
	if limit == 0 {
		limit = limits.ListMaxEntries
	}
	return in.Offset, limit, nil
}

func (x *executor) listDir(ctx context.Context, req request, in ListArgs) (ListResult, error) {
	offset, limit, err := in.window()
	if err != nil {
		return ListResult{}, err
	}
	p := in.Path
	if p == "" {
		p = "."
	}
	t, err := x.resolve(req.caps, capability.List, p)
	if err != nil {
		return ListResult{}, err
	}
	defer t.Close()
	entries, total, err := x.provider.ReadDir(ctx, t.Target, offset+limit)
	if err != nil {
		return ListResult{}, where(err, req.caps, p, t)
	}
	entries = entries[min(offset, len(entries)):]
	// Names and types come from the directory itself; a stat per entry
	// (for details) only when asked.
	budget := int(textBudget(req.maxOutput))
	var b strings.Builder
	b.Grow(min(len(entries)*24, budget) + 64)
	res := ListResult{Path: t.display, Offset: offset, Total: total}
	fitted := false
	for _, e := range entries {
		line, err := x.entryLine(ctx, t, e, in.Details)
		if err != nil {
			return ListResult{}, err
		}
		if b.Len()+len(line) > budget {
			fitted = true
			break
		}
		b.WriteString(line)
		res.Shown++
	}
	if offset+res.Shown < total {
		res.NextOffset = offset + res.Shown
	}
	res.NotShown = total - res.Shown
	b.WriteString(listFooter(res, fitted, req.maxOutput))
	res.text = b.String()
	return res, nil
}

// entryLine renders one entry; with details it stats the entry (an entry
// gone since the listing is shown as such).
func (x *executor) entryLine(ctx context.Context, t target, e files.DirEntry, details bool) (string, error) {
	var b strings.Builder
	b.WriteString(path.Base(e.Name))
	switch {
	case e.IsDir():
		b.WriteString("/")
	case e.Type&iofs.ModeSymlink != 0:
		b.WriteString("@")
	case !e.IsRegular() && !details:
		b.WriteString("  (special file)")
	}
	if details {
		info, err := x.statAt(ctx, t, e.Name)
		switch {
		case fault.CodeOf(err) == fault.NotFound:
			b.WriteString("  (removed since listed)")
		case err != nil:
			return "", err
		default:
			b.WriteString("  ")
			b.WriteString(infoText(info))
		}
	}
	b.WriteByte('\n')
	return b.String(), nil
}

// typeName names the type of an entry.
func typeName(m iofs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "directory"
	case m&iofs.ModeSymlink != 0:
		return "symlink"
	case m&iofs.ModeNamedPipe != 0:
		return "fifo"
	case m&iofs.ModeSocket != 0:
		return "socket"
	case m&iofs.ModeDevice != 0:
		return "device"
	}
	return "special"
}

// infoText is an entry's details: type, size, permissions (as ls shows
// them, type first), mtime.
func infoText(info files.Info) string {
	return typeName(info.Mode) + ", " + strconv.FormatInt(info.Size, 10) + " bytes, " +
		lsMode(info.Mode) + " (" + strconv.FormatUint(uint64(info.Mode.Perm()), 8) + "), modified " +
		info.ModTime.UTC().Format(time.RFC3339)
}

// lsMode is the permission string ls prints: the type's letter, then the
// permission bits (FileMode.String has other letters for types).
func lsMode(m iofs.FileMode) string {
	t := "?"
	switch {
	case m.IsRegular():
		t = "-"
	case m.IsDir():
		t = "d"
	case m&iofs.ModeSymlink != 0:
		t = "l"
	case m&iofs.ModeNamedPipe != 0:
		t = "p"
	case m&iofs.ModeSocket != 0:
		t = "s"
	case m&iofs.ModeCharDevice != 0:
		t = "c"
	case m&iofs.ModeDevice != 0:
		t = "b"
	}
	return t + m.Perm().String()[1:]
}

func listFooter(r ListResult, fitted bool, bound int64) string {
	var b strings.Builder
	b.WriteString("(")
	b.WriteString(strconv.Itoa(r.Total))
	b.WriteString(" entries in ")
	b.WriteString(r.Path)
	switch {
	case r.Shown > 0 && r.NotShown > 0:
		b.WriteString("; shown ")
		b.WriteString(strconv.Itoa(r.Offset + 1))
		b.WriteString("–")
		b.WriteString(strconv.Itoa(r.Offset + r.Shown))
		b.WriteString(", ")
		b.WriteString(strconv.Itoa(r.NotShown))
		b.WriteString(" not shown")
	case r.Shown == 0 && r.Total > 0:
		b.WriteString("; none at offset ")
		b.WriteString(strconv.Itoa(r.Offset))
	}
	if fitted {
		b.WriteString("; the listing ends here to fit the output bound of ")
		b.WriteString(strconv.FormatInt(bound, 10))
		b.WriteString(" bytes")
	}
	if r.NextOffset > 0 {
		b.WriteString("; continue with offset=")
		b.WriteString(strconv.Itoa(r.NextOffset))
	}
	b.WriteString(")\n")
	return b.String()
}
