package tabular

import (
	"bytes"
	"encoding/csv"
	"io"
	"strings"

	"github.com/capkit/capkit/internal/clip"

	"github.com/capkit/capkit/fault"
)

// Dialect is the field delimiter.
type Dialect string

// The dialects. DialectAuto detects one from the start of the input.
const (
	DialectAuto Dialect = ""
	Comma       Dialect = "comma"
	Pipe        Dialect = "pipe"
	Tab         Dialect = "tab"
)

// ParseDialect parses a dialect name; "" and "auto" mean DialectAuto.
func ParseDialect(s string) (Dialect, error) {
	switch d := Dialect(strings.ToLower(s)); d {
	case DialectAuto, "auto":
		return DialectAuto, nil
	case Comma, Pipe, Tab:
		return d, nil
	}
	return "", fault.New(fault.InvalidInput, "unknown dialect %q: use comma, pipe or tab", clip.Text(s))
}

// Rune is the delimiter character.
func (d Dialect) Rune() rune {
	switch d {
	case Pipe:
		return '|'
	case Tab:
		return '\t'
	}
	return ','
}

// detectRecords is how many records of the sample detection reads.
const detectRecords = 64

// detect picks the dialect that splits the sample's records into the same
// number (more than one) of fields, preferring the one giving most fields.
// A sample that every candidate splits into one field is comma (a single
// column). cut says the sample stops mid-input, so its last record may be
// partial and is not held against a candidate.
func detect(sample []byte, cut bool) (Dialect, error) {
	type score struct {
		d      Dialect
		fields int
	}
	var good []score
	for _, d := range []Dialect{Comma, Tab, Pipe} {
		r := csv.NewReader(bytes.NewReader(sample))
		r.Comma = d.Rune()
		r.FieldsPerRecord = -1
		fields, consistent, n := 0, true, 0
		var records [][]string
		var err error
		for n < detectRecords {
			var rec []string
			rec, err = r.Read()
			if err != nil {
				break
			}
			records = append(records, rec)
			n++
		}
		if cut && len(records) > 0 && (err == io.EOF || err == nil) {
			records = records[:len(records)-1] // may be partial
		}
		if err != nil && err != io.EOF && !cut {
			continue // this delimiter leaves the quoting broken
		}
		for i, rec := range records {
			if i == 0 {
				fields = len(rec)
			} else if len(rec) != fields {
				consistent = false
			}
		}
		if consistent && fields > 1 {
			good = append(good, score{d, fields})
		}
	}
	if len(good) == 0 {
		return Comma, nil
	}
	best := good[0]
	for _, s := range good[1:] {
		if s.fields > best.fields {
			best = s
		}
	}
	for _, s := range good {
		if s.d != best.d && s.fields == best.fields {
			return "", fault.New(fault.InvalidInput, "cannot tell the dialect: %s and %s both split every row into %d fields; pass the dialect", best.d, s.d, best.fields)
		}
	}
	return best.d, nil
}
