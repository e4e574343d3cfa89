package tabular

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"testing"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
)

// FuzzScan checks that no input panics or breaks the counting rules:
// failures are typed faults; on success the counts are consistent, every
// returned field is UTF-8, and for plain CSV in an explicit dialect the
// rows scanned are what encoding/csv reads.
func FuzzScan(f *testing.F) {
	for _, s := range []string{"a,b\n1,2\n", "a|b\n1|\"x|y\"\n", "a\tb\n1\t2\n", "\ufeffa\n1\n", "a,b\n1\n", "a\n\"x\n", "\x1f\x8b\x08", "PK\x05\x06"} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		dialects := []Dialect{DialectAuto, Comma, Pipe, Tab}
		opts := &Options{
			Dialect: dialects[mode%4],
			MaxRows: int64(mode/4) % 3,
			Offset:  int64(mode/16) % 2,
		}
		if mode&0x80 != 0 {
			opts.Filter = []Condition{{Column: "a", Op: Contains, Value: "1"}}
		}
		res, err := Scan(bg, data, opts)
		if err != nil {
			var fe *fault.Error
			if !errors.As(err, &fe) || !fe.Code.Valid() || fe.Code == fault.Internal {
				t.Fatalf("untyped or internal failure: %v", err)
			}
			return
		}
		s := res.Summary
		if s.Returned != int64(len(res.Rows)) || s.Skipped+s.Returned > s.Matched || s.Matched > s.Scanned ||
			(opts.MaxRows > 0 && s.Returned > opts.MaxRows) || s.Truncated != (s.Next != nil) ||
			s.Truncated != (s.Matched > s.Skipped+s.Returned) {
			t.Fatalf("inconsistent counts %+v", s)
		}
		for _, row := range res.Rows {
			if len(row) != len(s.Columns) {
				t.Fatalf("row %q has %d fields, columns %d", row, len(row), len(s.Columns))
			}
			for _, f := range row {
				if !utf8.ValidString(f) {
					t.Fatalf("invalid UTF-8 returned: %q", f)
				}
			}
		}
		if opts.Dialect != DialectAuto && s.Format == FormatCSV && !s.BOM {
			r := csv.NewReader(bytes.NewReader(data))
			r.Comma = opts.Dialect.Rune()
			n := int64(-1) // the header
			for {
				if _, err := r.Read(); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("encoding/csv refuses what Scan accepted: %v", err)
				}
				n++
			}
			if n != s.Scanned {
				t.Fatalf("scanned %d rows, encoding/csv reads %d", s.Scanned, n)
			}
		}
	})
}
