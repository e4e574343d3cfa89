package tabular

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/toolkit"
	"github.com/capkit/capkit/limits"
)

// ToolOptions configure RegisterTools: a toolkit.FileReader for path arguments
// and the policy bounds. A nil *ToolOptions means the zero value.
type ToolOptions = toolkit.ReaderOptions

// ScanArgs are csv_scan's arguments.
type ScanArgs struct {
	Path        string      `json:"path,omitempty" jsonschema:"CSV, .zip holding one CSV, or .gz file to read, relative to the first writable root or absolute inside any root (list_roots lists them); needs read_file on that root; give path or text, not both"`
	Text        string      `json:"text,omitempty" jsonschema:"CSV text inline; give path or text, not both"`
	Columns     []string    `json:"columns,omitempty" jsonschema:"header names of the columns to return, in order; default all"`
	Filter      []Condition `json:"filter,omitempty" jsonschema:"conditions that must all hold for a row to be returned"`
	MaxRows     int64       `json:"max_rows,omitempty" jsonschema:"row budget: return at most this many matched rows; the rest are counted and reported as truncated"`
	Offset      int64       `json:"offset,omitempty" jsonschema:"skip this many matched rows first (to continue after a truncated result)"`
	MaxScanRows int64       `json:"max_scan_rows,omitempty" jsonschema:"scan budget: data rows read before failing with limit; default and maximum in the tool description"`
	Dialect     string      `json:"dialect,omitempty" jsonschema:"comma, pipe or tab; default detected"`
	Format      string      `json:"format,omitempty" jsonschema:"csv, gzip or zip; default detected from the file's signature"`
}

// ScanResult is what csv_scan returns: the summary as structured content,
// the rows in the tool text only.
type ScanResult struct {
	Summary
	// Window reports that the rows stop where the output bound did, not
	// the row budget; NextOffset is the offset that continues after the
	// last returned row, with either (0: none).
	Window     bool  `json:"window,omitzero"`
	NextOffset int64 `json:"next_offset,omitzero"`
	text       string
}

// ToolText is a summary line, then the columns and each returned row as a
// JSON array of strings, one per line.
func (r ScanResult) ToolText() string { return r.text }

// outputReserve is the room a window's first cut leaves in the output
// bound for the summary line, the header and the structured summary (at
// most a quarter of the bound); the result is then measured exactly and
// cut again while it is too large.
const outputReserve = 2048

// RegisterTools registers csv_scan (effect parse, deferred); with no
// opts.Files, path arguments are refused (denied), and with them ZIP and
// GZIP input. opts may be nil.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	o := opts.Value()
	return kernel.AddTool(b, o.Policy("csv_scan", 0), kernel.Meta{
		Effect:  capability.Parse,
		Title:   "Scan CSV",
		Summary: "Read rows from a CSV/TSV/pipe file (or one zipped or gzipped): select columns, filter by value, exact counts.",
		Description: fmt.Sprintf(`Scans a delimited table (comma, tab or pipe; detected unless dialect is given) from path (a CSV, a ZIP holding exactly one CSV, or a GZIP'd CSV) or inline text. The first row is the header.
Returns the header, then matched rows (optionally only the named columns) as JSON arrays of strings, one per line, with exact counts: rows scanned, matched, skipped, returned. With max_rows, matched rows past the budget are counted and the result says truncated and where to continue (offset).
filter: [{"column": "state", "op": "eq", "value": "CA"}]; op is eq (default), ne or contains; exact, case-sensitive string comparison; all conditions must hold.
Limits: compressed input %s, CSV text %s (expanded), %d columns, %s per record, scan budget %d rows by default (max_scan_rows up to %d); over a limit fails with limit, never a partial answer. Ragged rows, bad quoting, invalid UTF-8 and UTF-16 fail with invalid_input naming the line; a UTF-8 BOM is removed.
Rows past the output bound (%s unless the host sets another) come as a window of whole rows: the result says window and gives next_offset, the offset that continues; a row too large alone fails with limit.
Example: {"path": "data/orders.csv.gz", "columns": ["id", "total"], "filter": [{"column": "status", "value": "open"}], "max_rows": 50}`,
			limits.Bytes(limits.TabularMaxCompressedBytes), limits.Bytes(limits.TabularMaxExpandedBytes), limits.TabularMaxColumns, limits.Bytes(limits.TabularMaxRecordBytes),
			limits.TabularDefaultRows, limits.TabularHardRows, limits.Bytes(limits.DefaultMaxOutputBytes)),
	}, func(ctx context.Context, call *kernel.Call, in ScanArgs) (ScanResult, error) {
		dialect, err := ParseDialect(in.Dialect)
		if err != nil {
			return ScanResult{}, err
		}
		format, err := ParseFormat(in.Format)
		if err != nil {
			return ScanResult{}, err
		}
		if in.Path == "" && (format == FormatGzip || format == FormatZip) {
			return ScanResult{}, fault.New(fault.InvalidInput, "%s input must come from a file: pass path", format)
		}
		data, err := toolkit.Read(ctx, call, o.Files, in.Text, in.Path, limits.TabularMaxExpandedBytes, "CSV")
		if err != nil {
			return ScanResult{}, err
		}
		o := &Options{Format: format, Dialect: dialect, Columns: in.Columns, Filter: in.Filter,
			Offset: in.Offset, MaxRows: in.MaxRows, MaxScanRows: in.MaxScanRows}
		return scanWindow(ctx, call, data, o)
	})
}

// errFull stops a scan whose rows already exceed the output bound.
var errFull = errors.New("the rows exceed the output bound")

// scanWindow scans data and returns every matched row the row budget
// allows when the result fits the call's output bound; otherwise the
// first rows that fit, as a result truncated where the next window starts
// (a second scan with that many rows, so that its counts are exact).
func scanWindow(ctx context.Context, call *kernel.Call, data []byte, o *Options) (ScanResult, error) {
	var lines []int64 // the cumulative bytes of the rows' lines
	var text strings.Builder
	sum, err := ScanFunc(ctx, data, o, func(row []string) error {
		line, err := jsonv2.Marshal(row)
		if err != nil {
			return fault.Wrap(fault.Internal, err, "encoding a row failed")
		}
		if int64(text.Len()+len(line)+1) > call.MaxOutputBytes {
			return errFull // cannot fit: the rows so far are enough to cut a window
		}
		text.Write(line)
		text.WriteByte('\n')
		lines = append(lines, int64(text.Len()))
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return ScanResult{}, err
	}
	complete := err == nil
	if complete {
		if r, err := scanResult(sum, text.String(), false); err != nil || r.size <= call.MaxOutputBytes {
			return r.ScanResult, err
		}
	}
	// The rows that fit beside a summary and header of the usual size;
	// fewer while the exact result is still too large. Every row did not
	// fit, so a window of a complete scan leaves one out at least.
	rows := text.String()
	n, _ := slices.BinarySearch(lines, call.MaxOutputBytes-min(outputReserve, call.MaxOutputBytes/4)+1)
	if complete {
		n = min(n, len(lines)-1)
	}
	for {
		if n == 0 {
			return ScanResult{}, toolkit.UnitTooLarge(call, fmt.Sprintf("matched row %d with the summary", o.Offset+1), 0, "name fewer columns")
		}
		w := *o
		w.MaxRows = int64(n)
		sum, err := ScanFunc(ctx, data, &w, func([]string) error { return nil })
		if err != nil {
			return ScanResult{}, err
		}
		r, err := scanResult(sum, rows[:lines[n-1]], true)
		if err != nil || r.size <= call.MaxOutputBytes {
			return r.ScanResult, err
		}
		n, _ = slices.BinarySearch(lines[:n-1], lines[n-1]-(r.size-call.MaxOutputBytes)+1)
	}
}

// sizedResult is a result and its size as the output bound counts it.
type sizedResult struct {
	ScanResult
	size int64
}

// scanResult renders the result of sum and its rows' lines.
func scanResult(sum *Summary, rows string, window bool) (sizedResult, error) {
	head, err := jsonv2.Marshal(sum.Columns)
	if err != nil {
		return sizedResult{}, fault.Wrap(fault.Internal, err, "encoding the columns failed")
	}
	r := ScanResult{Summary: *sum, Window: window, text: summaryLine(sum, window) + "\n" + string(head) + "\n" + rows}
	if sum.Truncated {
		r.NextOffset = sum.Next.Offset
	}
	structured, err := jsonv2.Marshal(r)
	if err != nil {
		return sizedResult{}, fault.Wrap(fault.Internal, err, "encoding the summary failed")
	}
	return sizedResult{r, int64(len(r.text) + len(structured))}, nil
}

// summaryLine states the counts and any truncation in words.
func summaryLine(s *Summary, window bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s", s.Format, s.Dialect)
	if s.BOM {
		b.WriteString(", byte order mark removed")
	}
	fmt.Fprintf(&b, "), %d columns; rows scanned %d, matched %d, skipped %d, returned %d", len(s.Header), s.Scanned, s.Matched, s.Skipped, s.Returned)
	switch {
	case window:
		fmt.Fprintf(&b, "; a WINDOW of the rows that fit the output bound: %d matched rows not returned, the next is data row %d (line %d); pass offset %d to continue",
			s.Matched-s.Skipped-s.Returned, s.Next.Row, s.Next.Line, s.Next.Offset)
	case s.Truncated:
		fmt.Fprintf(&b, "; TRUNCATED by the row budget: %d matched rows not returned, the next is data row %d (line %d); pass offset %d to continue",
			s.Matched-s.Skipped-s.Returned, s.Next.Row, s.Next.Line, s.Next.Offset)
	}
	return b.String()
}
