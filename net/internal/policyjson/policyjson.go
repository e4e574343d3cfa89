// Package policyjson reads the net group's reviewed policy files: strict
// JSON (package textjson's rules: duplicate names, invalid UTF-8 and
// trailing data are refused with their line and column) decoded into a
// struct that refuses unknown members and values of the wrong type, again
// with the line and column, and a "format" member that must be 1.
package policyjson

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/parse/textjson"
)

// Format is the only policy format version there is.
const Format = 1

// Decode checks data (at most limits.PolicyFileMaxBytes) and decodes it
// into v, a pointer to a struct whose Format int field, tagged "format",
// is format. what names the document in messages.
func Decode(ctx context.Context, what string, data []byte, v any, format *int) error {
	return DecodeMax(ctx, what, data, limits.PolicyFileMaxBytes, v, format)
}

// DecodeMax is Decode with another size bound.
func DecodeMax(ctx context.Context, what string, data []byte, max int64, v any, format *int) error {
	if _, err := textjson.Validate(ctx, data, &textjson.JSONOptions{MaxBytes: max}); err != nil {
		fe := fault.As(err)
		return fault.Wrap(fe.Code, err, "%s: %s", what, fe.Message)
	}
	if err := jsonv2.Unmarshal(data, v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return semantic(what, data, err)
	}
	if *format != Format {
		return fault.New(fault.InvalidInput, "%s: \"format\" must be %d (got %d)", what, Format, *format)
	}
	return nil
}

// Load reads the file at path (at most limits.PolicyFileMaxBytes) and
// decodes it like Decode.
func Load(ctx context.Context, what, path string, v any, format *int) error {
	data, err := ReadFile(path, limits.PolicyFileMaxBytes, what)
	if err != nil {
		return err
	}
	return Decode(ctx, what, data, v, format)
}

// ReadFile reads at most max bytes of a regular file.
func ReadFile(path string, max int64, what string) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO nobody writes to does not wait (it is
	// then refused as not a regular file); a regular file ignores it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		fe := fault.As(err)
		return nil, fault.Wrap(fe.Code, err, "%s: cannot open %s", what, path)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fault.Wrap(fault.IO, err, "%s: cannot stat %s", what, path)
	}
	if !st.Mode().IsRegular() {
		return nil, fault.New(fault.InvalidInput, "%s: %s is not a regular file", what, path)
	}
	if st.Size() > max {
		return nil, fault.LimitExceeded(what+" size in bytes", max, st.Size())
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil && st.Size() > 0 {
		return nil, fault.Wrap(fault.IO, err, "%s: cannot read %s", what, path)
	}
	return data, nil
}

// semantic locates a decoding error: an unknown member or a value of the
// wrong type.
func semantic(what string, data []byte, err error) error {
	var se *jsonv2.SemanticError
	if !errors.As(err, &se) {
		return fault.Wrap(fault.InvalidInput, err, "%s does not decode", what)
	}
	line, col := position(data, se.ByteOffset)
	reason := "invalid value"
	switch {
	case errors.Is(se.Err, jsonv2.ErrUnknownName):
		reason = "unknown field"
	case se.GoType != nil:
		reason = fmt.Sprintf("value must be %s", kindOf(se.GoType.Kind().String()))
	}
	return fault.Wrap(fault.InvalidInput, err, "%s: %s %q at line %d, column %d", what, reason, string(se.JSONPointer), line, col)
}

func kindOf(k string) string {
	switch k {
	case "int", "int64", "int32", "uint", "uint64", "float64":
		return "a number (" + k + ")"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return "a " + k
}

// position returns the 1-based line and column (in characters) of off.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	line, col = 1, 1
	for i := int64(0); i < off; {
		r, n := utf8.DecodeRune(data[i:])
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += int64(n)
	}
	return line, col
}
