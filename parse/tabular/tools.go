package tabular

import (
	"context"
	"fmt"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/toolkit"
	"github.com/capkit/capkit/limits"
)

// ToolOptions configure RegisterTools. The zero value registers csv_scan
// with inline text only and the kernel's default policy bounds.
type ToolOptions struct {
	// Files reads the files that path arguments name, confined to the
	// session's read_file roots. Nil refuses path arguments (denied), and
	// with them ZIP and GZIP input.
	Files files.FileReader
	// MaxInputBytes bounds each call's encoded arguments, inline text
	// included; zero is limits.DefaultMaxInputBytes.
	MaxInputBytes int64
	// MaxOutputBytes bounds each result; zero is
	// limits.DefaultMaxOutputBytes.
	MaxOutputBytes int64
}

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
	text string
}

// ToolText is a summary line, then the columns and each returned row as a
// JSON array of strings, one per line.
func (r ScanResult) ToolText() string { return r.text }

// outputReserve is room kept in the output bound, while rows stream, for
// the summary line and structured summary; the whole result is measured
// exactly before it is returned.
const outputReserve = 2048

// RegisterTools registers csv_scan (effect parse, deferred). opts may be
// nil.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	var o ToolOptions
	if opts != nil {
		o = *opts
	}
	return kernel.AddTool(b, kernel.Policy{Name: "csv_scan", MaxInputBytes: o.MaxInputBytes, MaxOutputBytes: o.MaxOutputBytes}, kernel.Meta{
		Effect:  capability.Parse,
		Title:   "Scan CSV",
		Summary: "Read rows from a CSV/TSV/pipe file (or one zipped or gzipped): select columns, filter by value, exact counts.",
		Description: fmt.Sprintf(`Scans a delimited table (comma, tab or pipe; detected unless dialect is given) from path (a CSV, a ZIP holding exactly one CSV, or a GZIP'd CSV) or inline text. The first row is the header.
Returns the header, then matched rows (optionally only the named columns) as JSON arrays of strings, one per line, with exact counts: rows scanned, matched, skipped, returned. With max_rows, matched rows past the budget are counted and the result says truncated and where to continue (offset).
filter: [{"column": "state", "op": "eq", "value": "CA"}]; op is eq (default), ne or contains; exact, case-sensitive string comparison; all conditions must hold.
Limits: compressed input %s, CSV text %s (expanded), %d columns, %s per record, scan budget %d rows by default (max_scan_rows up to %d); over a limit fails with limit, never a partial answer. Ragged rows, bad quoting, invalid UTF-8 and UTF-16 fail with invalid_input naming the line; a UTF-8 BOM is removed.
A result larger than the output limit fails with limit: pass max_rows or fewer columns.
Example: {"path": "data/orders.csv.gz", "columns": ["id", "total"], "filter": [{"column": "status", "value": "open"}], "max_rows": 50}`,
			limits.Bytes(limits.TabularMaxCompressedBytes), limits.Bytes(limits.TabularMaxExpandedBytes), limits.TabularMaxColumns, limits.Bytes(limits.TabularMaxRecordBytes),
			limits.TabularDefaultRows, limits.TabularHardRows),
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
		budget := call.MaxOutputBytes - outputReserve
		var text strings.Builder
		var rows int64
		sum, err := ScanFunc(ctx, data, &Options{
			Format: format, Dialect: dialect, Columns: in.Columns, Filter: in.Filter,
			Offset: in.Offset, MaxRows: in.MaxRows, MaxScanRows: in.MaxScanRows,
		}, func(row []string) error {
			line, err := jsonv2.Marshal(row)
			if err != nil {
				return fault.Wrap(fault.Internal, err, "encoding a row failed")
			}
			text.Write(line)
			text.WriteByte('\n')
			rows++
			if int64(text.Len()) > budget {
				return fault.OutputTooLarge(fmt.Sprintf("the first %d rows", rows), 0, call.MaxOutputBytes, fmt.Sprintf("pass max_rows below %d, fewer columns or a filter", rows))
			}
			return nil
		})
		if err != nil {
			return ScanResult{}, err
		}
		head, err := jsonv2.Marshal(sum.Columns)
		if err != nil {
			return ScanResult{}, fault.Wrap(fault.Internal, err, "encoding the columns failed")
		}
		structured, err := jsonv2.Marshal(sum)
		if err != nil {
			return ScanResult{}, fault.Wrap(fault.Internal, err, "encoding the summary failed")
		}
		out := summaryLine(sum) + "\n" + string(head) + "\n" + text.String()
		if size := int64(len(out) + len(structured)); size > call.MaxOutputBytes {
			return ScanResult{}, fault.OutputTooLarge("the result", size, call.MaxOutputBytes, "pass max_rows, fewer columns or a filter")
		}
		return ScanResult{Summary: *sum, text: out}, nil
	})
}

// summaryLine states the counts and any truncation in words.
func summaryLine(s *Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s", s.Format, s.Dialect)
	if s.BOM {
		b.WriteString(", byte order mark removed")
	}
	fmt.Fprintf(&b, "), %d columns; rows scanned %d, matched %d, skipped %d, returned %d", len(s.Header), s.Scanned, s.Matched, s.Skipped, s.Returned)
	if s.Truncated {
		fmt.Fprintf(&b, "; TRUNCATED by the row budget: %d matched rows not returned, the next is data row %d (line %d); pass offset %d to continue",
			s.Matched-s.Skipped-s.Returned, s.Next.Row, s.Next.Line, s.Next.Offset)
	}
	return b.String()
}
