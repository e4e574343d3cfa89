package textjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/capkit/capkit/fault"
)

// Reasons a text or JSON input is rejected, for errors.Is. They are carried
// by a *SyntaxError inside the *fault.Error the functions return.
var (
	// ErrInvalidUTF8 marks a byte that does not begin valid UTF-8.
	ErrInvalidUTF8 = fault.NewMark("invalid UTF-8")
	// ErrDuplicateName marks an object member name that repeats one
	// earlier in the same object.
	ErrDuplicateName = fault.NewMark("duplicate object member name")
	// ErrNonFinite marks NaN or Infinity (which are not JSON, though some
	// encoders write them) and numbers beyond the finite range of a 64-bit
	// float, which most consumers would read as ±Inf.
	ErrNonFinite = fault.NewMark("non-finite number (NaN, Infinity and numbers beyond the 64-bit float range are rejected)")
	// ErrTooDeep marks an object or array nested deeper than the limit.
	ErrTooDeep = fmt.Errorf("nesting deeper than %d", maxDepth)
	// ErrByteOrderMark marks a leading U+FEFF, which RFC 8259 forbids.
	ErrByteOrderMark = fault.NewMark("byte order mark before the JSON value (remove it)")
	// ErrTrailingData marks anything but whitespace after the value.
	ErrTrailingData = fault.NewMark("data after the end of the JSON value")
	// ErrUnexpectedEnd marks input that ends inside a value, or is empty.
	ErrUnexpectedEnd = fault.NewMark("unexpected end of input")
)

// SyntaxError locates a rejected input. It unwraps to its reason (one of
// the Err variables above) and to a *fault.Error (invalid_input, or limit
// for ErrTooDeep) carrying the same message, so fault.As, errors.Is and
// errors.As all see it.
type SyntaxError struct {
	// Offset is the byte offset of the first byte in error.
	Offset int64
	// Line and Column are 1-based; lines end at '\n' and columns count
	// characters.
	Line, Column int
	// Pointer is the JSON Pointer (RFC 6901) of the value in error, when
	// known. It names members of the caller's document: content, not for
	// logs, and not part of the message.
	Pointer string
	// Err is the reason: one of the Err variables of this package, or the
	// parser's description of a grammar error.
	Err error

	fault *fault.Error
}

// newSyntaxError locates reason at off in data. subject names the input
// ("JSON", "text") in the message.
func newSyntaxError(data []byte, off int64, subject string, reason error) *SyntaxError {
	line, col := position(data, off)
	e := &SyntaxError{Offset: off, Line: line, Column: col, Err: reason}
	code, what := fault.InvalidInput, "invalid "+subject
	if errors.Is(reason, ErrTooDeep) {
		code, what = fault.Limit, subject+" exceeds the depth limit"
	}
	e.fault = fault.New(code, "%s at line %d, column %d (byte offset %d): %v", what, line, col, off, reason)
	return e
}

// Error states the position and the reason, never document content.
func (e *SyntaxError) Error() string { return e.fault.Message }

// Unwrap returns the reason and the fault.
func (e *SyntaxError) Unwrap() []error { return []error{e.Err, e.fault} }

// grammarError is a parser complaint without its pointer, which would
// echo member names into messages.
type grammarError struct{ err error }

func (g grammarError) Error() string { return g.err.Error() }

// fromParser converts a jsontext error into a SyntaxError at the offset
// the parser reports, naming the reason without document content.
func fromParser(data []byte, err error) *SyntaxError {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return newSyntaxError(data, int64(len(data)), "JSON", ErrUnexpectedEnd)
	}
	off := se.ByteOffset
	var reason error
	switch {
	case errors.Is(se.Err, jsontext.ErrDuplicateName):
		reason = ErrDuplicateName
	case off < int64(len(data)) && invalidUTF8At(data, off):
		reason = ErrInvalidUTF8
	case nonFiniteLiteral(data, off):
		reason = ErrNonFinite
		if off > 0 && data[off-1] == '-' {
			off-- // point at the sign of -Infinity
		}
	case errors.Is(se.Err, io.ErrUnexpectedEOF):
		reason = ErrUnexpectedEnd
	default:
		reason = grammarError{se.Err}
	}
	e := newSyntaxError(data, off, "JSON", reason)
	e.Pointer = string(se.JSONPointer)
	return e
}

// invalidUTF8At reports whether the byte at off does not begin valid UTF-8.
func invalidUTF8At(data []byte, off int64) bool {
	r, n := utf8.DecodeRune(data[off:])
	return r == utf8.RuneError && n == 1
}

// nonFiniteLiteral reports whether the grammar error at off is a NaN or
// Infinity literal, so the message can say so.
func nonFiniteLiteral(data []byte, off int64) bool {
	if off > 0 && data[off-1] == '-' {
		off--
	}
	rest := data[off:]
	for _, lit := range []string{"NaN", "Infinity", "-Infinity", "+Infinity", "-NaN"} {
		if bytes.HasPrefix(rest, []byte(lit)) {
			return true
		}
	}
	return false
}
