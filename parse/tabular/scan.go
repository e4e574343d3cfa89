package tabular

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"

	"github.com/capkit/capkit/internal/clip"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Options configure a scan. The zero value scans every column of a
// detected format and dialect, with the default scan budget and no row
// budget.
type Options struct {
	Format  Format
	Dialect Dialect
	// Columns projects each returned row onto these header names, in this
	// order; empty returns every column.
	Columns []string
	// Filter lists conditions that must all hold for a row to match.
	Filter []Condition
	// Offset skips this many matched rows before returning any.
	Offset int64
	// MaxRows is the row budget: at most this many matched rows are
	// returned; matched rows beyond it are counted and the result is
	// marked Truncated. Zero means no budget.
	MaxRows int64
	// MaxScanRows bounds the data rows read: zero means
	// limits.TabularDefaultRows; at most limits.TabularHardRows. More rows
	// than this fail with limit.
	MaxScanRows int64
}

// Position locates a row.
type Position struct {
	// Row is the 1-based data row number (the header is not counted).
	Row int64 `json:"row"`
	// Line is the 1-based input line where the row starts.
	Line int64 `json:"line"`
	// Offset is the Options.Offset that makes this row the first returned.
	Offset int64 `json:"offset"`
}

// Summary describes a scan: what was read and the exact counts.
type Summary struct {
	Format  Format  `json:"format"`
	Dialect Dialect `json:"dialect"`
	// BOM reports that a UTF-8 byte order mark was removed.
	BOM bool `json:"bom"`
	// Member is the name of the CSV inside a ZIP.
	Member string `json:"member,omitempty"`
	// Header is every column name; Columns the names of the fields each
	// returned row holds.
	Header  []string `json:"header"`
	Columns []string `json:"columns"`
	// ExpandedBytes is the size of the CSV text read.
	ExpandedBytes int64 `json:"expanded_bytes"`
	Scanned       int64 `json:"rows_scanned"`
	Matched       int64 `json:"rows_matched"`
	Skipped       int64 `json:"rows_skipped"`
	Returned      int64 `json:"rows_returned"`
	// Truncated reports that the row budget stopped the output before
	// every matched row was returned; Next is the first matched row not
	// returned.
	Truncated bool      `json:"truncated"`
	Next      *Position `json:"next,omitempty"`
}

// Result is a scan's summary and returned rows.
type Result struct {
	Summary
	Rows [][]string `json:"rows"`
}

// Scan reads data and returns the matched rows within the budgets. Rows
// are held in memory; use ScanFunc to stream them.
func Scan(ctx context.Context, data []byte, opts *Options) (*Result, error) {
	res := &Result{Rows: [][]string{}}
	sum, err := ScanFunc(ctx, data, opts, func(row []string) error {
		res.Rows = append(res.Rows, row)
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Summary = *sum
	return res, nil
}

// bufSize is the read buffer under the CSV reader; the dialect is
// detected from its first fill.
const bufSize = 64 << 10

// ctxCheckRows is how many rows pass between context checks.
const ctxCheckRows = 4096

// ScanFunc reads data and calls fn with each returned row (the projected
// fields, a fresh slice fn may keep), in input order. An error from fn
// stops the scan and is returned. The summary's counts are exact once
// ScanFunc returns without error.
func ScanFunc(ctx context.Context, data []byte, opts *Options, fn func(row []string) error) (*Summary, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	maxScan, err := checkOptions(&o)
	if err != nil {
		return nil, err
	}
	s, closeFn, err := newScanner(data, o, maxScan)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	if err := s.readHeader(); err != nil {
		return nil, err
	}
	if err := s.plan(); err != nil {
		return nil, err
	}
	if err := s.rows(ctx, fn); err != nil {
		return nil, err
	}
	if s.bounded.utf8.bad >= 0 { // after the last record: not reachable through a field
		return nil, fault.New(fault.InvalidInput, "byte %d of the CSV text is not valid UTF-8; convert the input to UTF-8", s.bounded.utf8.bad+1)
	}
	s.sum.ExpandedBytes = s.bounded.n
	return s.sum, nil
}

// checkOptions validates o and returns the scan budget it means.
func checkOptions(o *Options) (int64, error) {
	maxScan := o.MaxScanRows
	switch {
	case maxScan == 0:
		maxScan = limits.TabularDefaultRows
	case maxScan < 0:
		return 0, fault.New(fault.InvalidInput, "the scan budget must be positive, got %d", maxScan)
	case maxScan > limits.TabularHardRows:
		return 0, fault.LimitExceeded("scan budget rows", limits.TabularHardRows, maxScan)
	}
	if o.MaxRows < 0 || o.Offset < 0 {
		return 0, fault.New(fault.InvalidInput, "max rows and offset must not be negative")
	}
	if len(o.Columns) > limits.TabularMaxColumns || len(o.Filter) > limits.TabularMaxColumns {
		return 0, fault.New(fault.Limit, "at most %d columns and %d filter conditions may be named", limits.TabularMaxColumns, limits.TabularMaxColumns)
	}
	if o.Dialect != DialectAuto {
		if _, err := ParseDialect(string(o.Dialect)); err != nil {
			return 0, err
		}
	}
	if _, err := ParseFormat(string(o.Format)); err != nil {
		return 0, err
	}
	return maxScan, nil
}

// scanner is one scan's state: the bounded text stream, the CSV reader
// over it, and what to return of each row.
type scanner struct {
	o       Options
	maxScan int64
	sum     *Summary
	bounded *boundedReader
	bom     int64 // bytes of a UTF-8 byte order mark removed
	keep    *quotedCRLF
	r       *csv.Reader
	proj    []int  // the record fields returned, in order
	tests   []test // the filter
}

// newScanner opens data (decompressing it), removes a UTF-8 byte order
// mark, detects the dialect and sets up the CSV reader.
func newScanner(data []byte, o Options, maxScan int64) (*scanner, func() error, error) {
	stream, closeFn, member, err := open(data, o.Format)
	if err != nil {
		return nil, nil, err
	}
	s := &scanner{o: o, maxScan: maxScan, sum: &Summary{Format: o.Format, Member: member}}
	if s.sum.Format == FormatAuto {
		s.sum.Format = sniffFormat(data)
	}
	s.bounded = &boundedReader{r: stream, max: limits.TabularMaxExpandedBytes, slack: bufSize, utf8: newUTF8Stream()}
	br := bufio.NewReaderSize(s.bounded, bufSize)
	if err := s.byteOrderMark(br); err != nil {
		closeFn()
		return nil, nil, err
	}
	s.sum.Dialect = o.Dialect
	if s.sum.Dialect == DialectAuto {
		sample, err := br.Peek(bufSize)
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			closeFn()
			return nil, nil, decodeErr(err)
		}
		if s.sum.Dialect, err = detect(sample, err == nil || err == bufio.ErrBufferFull); err != nil {
			closeFn()
			return nil, nil, err
		}
	}
	s.keep = newQuotedCRLF(br)
	s.r = csv.NewReader(s.keep)
	s.r.Comma = s.sum.Dialect.Rune()
	s.r.FieldsPerRecord = 0
	return s, closeFn, nil
}

// byteOrderMark removes and reports a UTF-8 byte order mark and refuses
// a UTF-16 one.
func (s *scanner) byteOrderMark(br *bufio.Reader) error {
	head, err := br.Peek(3)
	if err != nil && err != io.EOF {
		return decodeErr(err)
	}
	switch {
	case bytes.HasPrefix(head, []byte("\xef\xbb\xbf")):
		s.sum.BOM, s.bom = true, 3
		br.Discard(3)
	case bytes.HasPrefix(head, []byte{0xff, 0xfe}), bytes.HasPrefix(head, []byte{0xfe, 0xff}):
		return fault.New(fault.InvalidInput, "the input is UTF-16 (it starts with a UTF-16 byte order mark); convert it to UTF-8")
	}
	return nil
}

// offset is the input offset of what the CSV reader has consumed.
func (s *scanner) offset() int64 { return s.bom + s.keep.Source(s.r.InputOffset()) }

// invalidBefore reports whether the stream's first invalid UTF-8 byte lies
// in what the CSV reader has consumed, so in the last record.
func (s *scanner) invalidBefore() bool {
	return s.bounded.utf8.bad >= 0 && s.bounded.utf8.bad < s.offset()
}

func (s *scanner) readHeader() error {
	header, err := s.r.Read()
	if err == io.EOF {
		return fault.New(fault.InvalidInput, "the input is empty: a header row is required")
	}
	if err != nil {
		return readErr(err, 0, 0, 0)
	}
	if len(header) > limits.TabularMaxColumns {
		return fault.LimitExceeded("columns in the header", limits.TabularMaxColumns, int64(len(header)))
	}
	if s.invalidBefore() {
		return utf8Err(s.r, header, 0, s.bounded.utf8.bad)
	}
	s.sum.Header = append([]string(nil), header...)
	return nil
}

// plan resolves the selected columns and the filter against the header.
func (s *scanner) plan() error {
	index := map[string]int{}
	for i, name := range s.sum.Header {
		if _, dup := index[name]; dup {
			index[name] = -1
		} else {
			index[name] = i
		}
	}
	lookup := func(name string) (int, error) {
		i, ok := index[name]
		switch {
		case !ok:
			return 0, fault.New(fault.InvalidInput, "column %q is not in the header", clip.Text(name))
		case i < 0:
			return 0, fault.New(fault.InvalidInput, "column %q appears more than once in the header, so it cannot be selected", clip.Text(name))
		}
		return i, nil
	}
	s.sum.Columns = s.sum.Header
	for i := range s.sum.Header {
		s.proj = append(s.proj, i)
	}
	if len(s.o.Columns) > 0 {
		s.proj = s.proj[:0]
		for _, name := range s.o.Columns {
			i, err := lookup(name)
			if err != nil {
				return err
			}
			s.proj = append(s.proj, i)
		}
		s.sum.Columns = append([]string(nil), s.o.Columns...)
	}
	for _, c := range s.o.Filter {
		i, err := lookup(c.Column)
		if err != nil {
			return err
		}
		op := c.Op
		switch op {
		case "":
			op = Equals
		case Equals, NotEquals, Contains:
		default:
			return fault.New(fault.InvalidInput, "unknown filter operator %q: use eq, ne or contains", clip.Text(string(op)))
		}
		s.tests = append(s.tests, test{i: i, op: op, v: c.Value})
	}
	// Returned rows are fresh slices: the reader's own when every column
	// is returned, else projections of a record the reader reuses.
	s.r.ReuseRecord = len(s.o.Columns) > 0 || len(s.tests) > 0
	return nil
}

// rows reads every data row, counts it, and hands the returned ones to fn.
func (s *scanner) rows(ctx context.Context, fn func(row []string) error) error {
	sum := s.sum
	s.bounded.recordStart = s.offset()
	for {
		if sum.Scanned%ctxCheckRows == 0 {
			if err := ctx.Err(); err != nil {
				return fault.As(err)
			}
		}
		rec, err := s.record()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if !s.matches(rec) {
			continue
		}
		sum.Matched++
		switch {
		case sum.Matched <= s.o.Offset:
			sum.Skipped++
		case s.o.MaxRows > 0 && sum.Returned >= s.o.MaxRows:
			if !sum.Truncated {
				line, _ := s.r.FieldPos(0)
				sum.Truncated = true
				sum.Next = &Position{Row: sum.Scanned, Line: int64(line), Offset: s.o.Offset + sum.Returned}
			}
		default:
			sum.Returned++
			if err := fn(s.project(rec)); err != nil {
				return err
			}
		}
	}
}

// record reads one data row within the record, scan and UTF-8 bounds.
func (s *scanner) record() ([]string, error) {
	sum := s.sum
	start := s.offset()
	rec, err := s.r.Read()
	if err == io.EOF {
		return nil, err
	}
	if err != nil {
		return nil, readErr(err, sum.Scanned+1, len(rec), len(sum.Header))
	}
	end := s.offset()
	if end-start > limits.TabularMaxRecordBytes {
		line, _ := s.r.FieldPos(0)
		return nil, fault.Wrap(fault.Limit, ErrRecordTooLarge, "data row %d (line %d) is %d bytes, over the record limit of %d", sum.Scanned+1, line, end-start, limits.TabularMaxRecordBytes)
	}
	s.bounded.recordStart = end
	sum.Scanned++
	if sum.Scanned > s.maxScan {
		return nil, fault.New(fault.Limit, "the input has more than %d data rows, the scan budget; pass a larger scan budget (at most %d)", s.maxScan, limits.TabularHardRows)
	}
	if s.invalidBefore() {
		return nil, utf8Err(s.r, rec, sum.Scanned, s.bounded.utf8.bad)
	}
	return rec, nil
}

func (s *scanner) matches(rec []string) bool {
	for _, t := range s.tests {
		if !t.holds(rec) {
			return false
		}
	}
	return true
}

// project is the returned row of rec: rec itself when the reader does not
// reuse it, else a fresh slice of the selected fields.
func (s *scanner) project(rec []string) []string {
	if !s.r.ReuseRecord {
		return rec
	}
	row := make([]string, len(s.proj))
	for j, i := range s.proj {
		row[j] = rec[i]
	}
	return row
}

// utf8Err locates the invalid UTF-8 byte at stream offset bad, which
// lies in rec or in the blank lines before it.
func utf8Err(r *csv.Reader, rec []string, row int64, bad int64) error {
	for i, f := range rec {
		if j := firstInvalid([]byte(f)); j < len(f) {
			line, col := r.FieldPos(i)
			return fault.New(fault.InvalidInput, "%s, field %d (line %d, column %d): byte %d of the field is not valid UTF-8; convert the input to UTF-8", where(row), i+1, line, col, j+1)
		}
	}
	return fault.New(fault.InvalidInput, "byte %d of the CSV text is not valid UTF-8; convert the input to UTF-8", bad+1)
}

func where(row int64) string {
	if row == 0 {
		return "header"
	}
	return "data row " + itoa(row)
}

// readErr turns a CSV reader failure into a fault naming where it
// happened; got and want are the ragged row's and the header's field
// counts.
func readErr(err error, row int64, got, want int) error {
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return decodeErr(err)
	}
	if pe.Err != nil && !errors.Is(pe.Err, csv.ErrFieldCount) && !errors.Is(pe.Err, csv.ErrQuote) && !errors.Is(pe.Err, csv.ErrBareQuote) {
		return decodeErr(pe.Err)
	}
	switch {
	case errors.Is(pe.Err, csv.ErrFieldCount):
		return fault.New(fault.InvalidInput, "%s (line %d) has %d fields but the header has %d; ragged rows are not accepted", where(row), pe.StartLine, got, want)
	case errors.Is(pe.Err, csv.ErrBareQuote):
		return fault.New(fault.InvalidInput, "bad quoting at line %d, column %d: a quote inside an unquoted field (quote the whole field and double the inner quotes)", pe.Line, pe.Column)
	}
	return fault.New(fault.InvalidInput, "bad quoting in the record starting at line %d: a quoted field is not closed properly (line %d, column %d)", pe.StartLine, pe.Line, pe.Column)
}
