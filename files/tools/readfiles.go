package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

var readFilesDescription = fmt.Sprintf(`Reads several text files in one call (at most %d), each with its own window as read_file takes it ({path, offset, limit} or {path, tail}). The tool's output bound (%d bytes by default) is shared equally among the files; each file's window ends on a whole line within its share and says how to read on. A file that cannot be read gets its own error line and does not fail the others; images are refused here (read them with read_file). Each file read counts as read_file's read for write_file and edit_file.
Example: {"files": [{"path": "go.mod"}, {"path": "src/main.go", "offset": 100, "limit": 50}, {"path": "logs/app.log", "tail": 20}]}`, limits.ReadFilesMaxPaths, limits.ToolTextBytes)

// readFilesHeadingBytes is kept for each file's heading and structured
// entry; readFilesMinShare is the least room a file's window may get.
const (
	readFilesHeadingBytes = 256
	readFilesMinShare     = 1024
)

// ReadFilesArgs are read_files' arguments.
type ReadFilesArgs struct {
	Files []ReadArgs `json:"files" jsonschema:"the files, each with an optional window"`
}

// ReadFilesEntry reports one file of read_files.
type ReadFilesEntry struct {
	Path       string     `json:"path"`
	StartLine  int        `json:"start_line,omitempty"`
	EndLine    int        `json:"end_line,omitempty"`
	TotalLines int        `json:"total_lines,omitempty"`
	NextOffset int        `json:"next_offset,omitempty"`
	Code       fault.Code `json:"code,omitempty" jsonschema:"the failure's code, when this file could not be read"`
	Error      string     `json:"error,omitempty"`
}

// ReadFilesResult reports read_files; the windows are its text.
type ReadFilesResult struct {
	Files  []ReadFilesEntry `json:"files"`
	Failed int              `json:"failed"`

	text string
}

func (r ReadFilesResult) ToolText() string { return r.text }

func (x *executor) readFiles(ctx context.Context, req request, in ReadFilesArgs) (ReadFilesResult, error) {
	n := len(in.Files)
	switch {
	case n == 0:
		return ReadFilesResult{}, fault.New(fault.InvalidInput, "files is empty; give at least one {path}")
	case n > limits.ReadFilesMaxPaths:
		return ReadFilesResult{}, fault.LimitExceeded("files", limits.ReadFilesMaxPaths, int64(n))
	}
	share := req
	share.maxOutput = textBudget(req.maxOutput)/int64(n) - readFilesHeadingBytes
	if share.maxOutput < readFilesMinShare {
		return ReadFilesResult{}, fault.New(fault.Limit, "%d files do not fit in this tool's output bound of %d bytes (each needs at least %d): read fewer at once", n, req.maxOutput, readFilesMinShare+readFilesHeadingBytes)
	}
	var res ReadFilesResult
	var b strings.Builder
	for _, a := range in.Files {
		if err := ctx.Err(); err != nil {
			return ReadFilesResult{}, fault.As(err)
		}
		e, text := x.readOne(ctx, share, a)
		if e.Code != "" {
			res.Failed++
		}
		res.Files = append(res.Files, e)
		b.WriteString("==> ")
		b.WriteString(e.Path)
		b.WriteString(" <==\n")
		b.WriteString(text)
	}
	res.text = b.String()
	return res, nil
}

// readOne reads one file of read_files: its entry and its text (the
// window, or the error).
func (x *executor) readOne(ctx context.Context, req request, a ReadArgs) (ReadFilesEntry, string) {
	e := ReadFilesEntry{Path: a.Path}
	r, err := x.readFile(ctx, req, a)
	if err == nil && r.MediaType != "" {
		err = fault.New(fault.InvalidInput, "%s is an image (%s); read it with read_file", r.Path, r.MediaType)
	}
	if err != nil {
		r.Release()
		fe := fault.As(err)
		e.Code, e.Error = fe.Code, fe.Error()
		if fe.Code == fault.IO || fe.Code == fault.Internal || fe.Err != nil {
			// As the kernel reduces a failed call's: no detail in a result.
			e.Error = fe.Public()
		}
		return e, string(fe.Code) + ": " + e.Error + "\n"
	}
	defer r.Release()
	e.Path, e.StartLine, e.EndLine, e.TotalLines, e.NextOffset = r.Path, r.StartLine, r.EndLine, r.TotalLines, r.NextOffset
	return e, r.ToolText()
}
