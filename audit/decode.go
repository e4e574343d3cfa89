package audit

import (
	"bytes"
	"math"
	"unicode/utf8"
)

// The events a reader decodes are, but for a trail not written by
// capkit, in the form the encoder writes: canonical JSON, no whitespace,
// members sorted, strings without escapes but for a quote, a backslash or
// a control character. decodeCanonical reads that form in one pass over
// the bytes, without the JSON package's reflection (the exporter decodes
// every call's event: it was 44 % of capkit-otel's CPU); anything else
// (an escape, whitespace, a member of a type the event does not hold, a
// name out of order) it declines, and Decode reads the event with the
// JSON package. What it accepts, the JSON package accepts as the same
// event (FuzzDecode), so the outcome is the JSON package's either way.

// maxCanonicalDepth is the deepest nesting decodeCanonical reads; deeper
// events are the JSON package's.
const maxCanonicalDepth = 32

// scanner reads canonical JSON from b, at i.
type scanner struct {
	b []byte
	i int
}

// decodeCanonical sets e to the event data holds, and reports whether it
// could: false leaves e partly set.
func decodeCanonical(data []byte, e *Event) bool {
	*e = Event{CallsLeft: -1, JSON: data}
	d := scanner{b: data}
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return d.i == len(d.b)
	}
	var last []byte
	for first := true; ; first = false {
		name, ok := d.str()
		if !ok || (!first && bytes.Compare(name, last) <= 0) || !d.next(':') || !d.member(name, e) {
			return false
		}
		last = name
		if !d.next(',') {
			return d.next('}') && d.i == len(d.b)
		}
	}
}

// member reads the value of the top-level member name into the field of
// e it names, or skips it.
func (d *scanner) member(name []byte, e *Event) bool {
	var ok bool
	switch string(name) {
	case "time":
		ok = d.time(e)
	case "msg":
		e.Msg, ok = d.text()
	case "actor":
		e.Actor, ok = d.text()
	case "session":
		e.Session, ok = d.text()
	case "request":
		e.Request, ok = d.text()
	case "tool":
		e.Tool, ok = d.text()
	case "outcome":
		e.Outcome, ok = d.text()
	case "policy":
		e.Policy, ok = d.text()
	case "in_bytes":
		e.InBytes, ok = d.int()
	case "out_bytes":
		e.OutBytes, ok = d.int()
	case "duration_us":
		e.DurationUS, ok = d.int()
	case "calls_left":
		e.CallsLeft, ok = d.int()
	case "lost":
		e.Lost, ok = d.int()
	default:
		ok = d.value(0)
	}
	return ok
}

// next consumes c when it comes next.
func (d *scanner) next(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// str reads a string without escapes, in valid UTF-8, and returns its
// bytes.
func (d *scanner) str() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	start, ascii := d.i, true
	for i := start; i < len(d.b); i++ {
		switch c := d.b[i]; {
		case c == '"':
			s := d.b[start:i]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			d.i = i + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// text reads a string member's value.
func (d *scanner) text() (string, bool) {
	s, ok := d.str()
	return string(s), ok
}

// time reads the event's time: RFC 3339 in UTC, as the encoder writes it
// (YYYY-MM-DDTHH:MM:SS, up to nine digits of a second, Z), parsed as the
// JSON package parses it.
func (d *scanner) time(e *Event) bool {
	s, ok := d.str()
	if !ok || !rfc3339UTC(s) {
		return false
	}
	return e.Time.UnmarshalText(s) == nil
}

// rfc3339UTC reports whether s has the shape YYYY-MM-DDTHH:MM:SS[.F]Z,
// F one to nine digits.
func rfc3339UTC(s []byte) bool {
	const shape = "dddd-dd-ddTdd:dd:dd"
	if len(s) < len(shape)+1 || s[len(s)-1] != 'Z' {
		return false
	}
	for i := 0; i < len(shape); i++ {
		if c := s[i]; shape[i] == 'd' && !isDigit(c) || shape[i] != 'd' && c != shape[i] {
			return false
		}
	}
	frac := s[len(shape) : len(s)-1]
	if len(frac) == 0 {
		return true
	}
	if len(frac) < 2 || len(frac) > 10 || frac[0] != '.' {
		return false
	}
	for _, c := range frac[1:] {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// int reads an integer that an int64 holds: -?(0|[1-9][0-9]*), nothing
// fractional or with an exponent.
func (d *scanner) int() (int64, bool) {
	i, neg := d.i, false
	if i < len(d.b) && d.b[i] == '-' {
		neg, i = true, i+1
	}
	start := i
	var n uint64
	for ; i < len(d.b) && isDigit(d.b[i]); i++ {
		if i-start >= 19 {
			return 0, false // past any int64 (the JSON package's to say)
		}
		n = n*10 + uint64(d.b[i]-'0')
	}
	if i == start || (d.b[start] == '0' && i-start > 1) {
		return 0, false
	}
	if i < len(d.b) && (d.b[i] == '.' || d.b[i] == 'e' || d.b[i] == 'E') {
		return 0, false
	}
	if neg && n > math.MaxInt64+1 || !neg && n > math.MaxInt64 {
		return 0, false
	}
	d.i = i
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

// value skips one value at depth.
func (d *scanner) value(depth int) bool {
	if d.i >= len(d.b) {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '"':
		_, ok := d.str()
		return ok
	case c == '{':
		return depth < maxCanonicalDepth && d.object(depth+1)
	case c == '[':
		return depth < maxCanonicalDepth && d.array(depth+1)
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || isDigit(c):
		return d.number()
	}
	return false
}

// object skips an object whose names are in strictly increasing order
// (so none is given twice).
func (d *scanner) object(depth int) bool {
	d.i++ // '{'
	if d.next('}') {
		return true
	}
	var last []byte
	for first := true; ; first = false {
		name, ok := d.str()
		if !ok || (!first && bytes.Compare(name, last) <= 0) || !d.next(':') || !d.value(depth) {
			return false
		}
		last = name
		if !d.next(',') {
			return d.next('}')
		}
	}
}

// array skips an array.
func (d *scanner) array(depth int) bool {
	d.i++ // '['
	if d.next(']') {
		return true
	}
	for {
		if !d.value(depth) {
			return false
		}
		if !d.next(',') {
			return d.next(']')
		}
	}
}

func (d *scanner) literal(lit string) bool {
	if !bytes.HasPrefix(d.b[d.i:], []byte(lit)) {
		return false
	}
	d.i += len(lit)
	return true
}

// number skips a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *scanner) number() bool {
	b, i := d.b, d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && isDigit(b[i]):
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || !isDigit(b[i]) {
			return false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	d.i = i
	return true
}
