package audit

import (
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The encoder writes a slog record in canonical JSON directly (RFC 8785:
// members sorted by their UTF-16 code units, minimal string escapes,
// numbers as ECMAScript prints them), rather than encoding it as JSON and
// canonicalizing that: the record's values are already typed, and this is
// on every call's path. The tests hold its output to journal.Canonicalize.

// encoder builds one record's canonical JSON: the members' values are
// encoded back to back in buf as they come, each member naming its
// range, and an object is written once its members are known and sorted.
// The members of the objects being built are a stack in ms (an object's
// own from the index where it began), so nothing is allocated per member
// and, once an encoder has grown, nothing per record but the result.
type encoder struct {
	buf []byte
	ms  []member
	// fields are the top-level members Event names met so far
	// (fieldBit's).
	fields uint16
	// event and out are what Handler hands its sinks, reused once they
	// have all returned.
	event Event
	out   []byte
}

// member is one encoded name and value (buf[start:end]) of an object
// being built.
type member struct {
	name       string
	start, end int
	ascii      bool // name is ASCII: it sorts by its bytes
}

// encoders are reused across records: an encoder grown to a record's
// size allocates nothing for the next one.
var encoders = sync.Pool{New: func() any { return new(encoder) }}

// frame is a handler's attributes at one depth: those of the group it
// opened (none for the first frame) given before the record's.
type frame struct {
	group string
	attrs []slog.Attr
}

// encodeRecord appends r, as a canonical JSON object inside the
// handler's frames, to dst, and sets the fields of e its top-level
// members name.
func (c *encoder) encodeRecord(dst []byte, e *Event, r slog.Record, frames []frame) []byte {
	c.buf, c.ms, c.fields = c.buf[:0], c.ms[:0], 0
	start := len(c.buf)
	c.buf = append(c.buf, '"')
	c.buf = r.Time.UTC().AppendFormat(c.buf, time.RFC3339Nano)
	c.buf = append(c.buf, '"')
	c.ms = append(c.ms, member{"time", start, len(c.buf), true})
	c.addValue("level", slog.StringValue(r.Level.String()))
	c.addValue("msg", slog.StringValue(r.Message))
	e.Time, e.Msg = r.Time, r.Message
	if len(frames) > 0 {
		for _, a := range frames[0].attrs {
			c.addTop(a, e)
		}
	}
	if len(frames) > 1 {
		// The record's attributes go inside the groups the handler
		// opened; only the first frame's are top-level members.
		attrs := make([]slog.Attr, 0, r.NumAttrs())
		r.Attrs(func(a slog.Attr) bool {
			attrs = append(attrs, a)
			return true
		})
		for i := len(frames) - 1; i >= 1; i-- {
			attrs = []slog.Attr{{Key: frames[i].group, Value: slog.GroupValue(append(slices.Clip(frames[i].attrs), attrs...)...)}}
		}
		for _, a := range attrs {
			c.addTop(a, e)
		}
	} else {
		r.Attrs(func(a slog.Attr) bool {
			c.addTop(a, e)
			return true
		})
	}
	return c.object(dst, 0)
}

// addValue adds a member whose name is known to be valid and new.
func (c *encoder) addValue(name string, v slog.Value) {
	if start, ok := c.value(v); ok {
		c.ms = append(c.ms, member{name, start, len(c.buf), true})
	}
}

// addTop adds a to the top-level members and, when it is one of the
// members Event names, sets it on e.
func (c *encoder) addTop(a slog.Attr, e *Event) {
	v := a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Key == "" && v.Kind() == slog.KindGroup {
		c.members(v.Group(), 0)
		return
	}
	key := validName(a.Key)
	if c.fields&fieldBit(key) == 0 {
		setField(e, key, v)
	}
	c.add(0, key, v)
}

// add encodes v as the member key of the object whose members begin at
// from, unless it is an empty group. A name given twice is written once
// (object keeps the first), and a top-level member Event names is noted
// in fields: Event holds the first too.
func (c *encoder) add(from int, key string, v slog.Value) {
	mark := len(c.buf)
	start, ok := c.value(v)
	if !ok {
		c.buf = c.buf[:mark]
		return
	}
	if from == 0 {
		c.fields |= fieldBit(key)
	}
	c.ms = append(c.ms, member{key, start, len(c.buf), isASCII(key)})
}

// members encodes attributes as members of the object whose members
// begin at from, as slog's JSON handler would: an empty attribute
// skipped, an empty-keyed group inlined, empty groups left out.
func (c *encoder) members(attrs []slog.Attr, from int) {
	for _, a := range attrs {
		v := a.Value.Resolve()
		if a.Equal(slog.Attr{}) {
			continue
		}
		if a.Key == "" && v.Kind() == slog.KindGroup {
			c.members(v.Group(), from)
			continue
		}
		c.add(from, validName(a.Key), v)
	}
}

// object appends to dst the object whose members begin at from, sorted
// as canonical JSON orders them, and pops them. Of members of one name
// only the first is written (the record's time, level and message come
// first): canonical JSON has no duplicate names.
func (c *encoder) object(dst []byte, from int) []byte {
	ms := c.ms[from:]
	sortMembers(ms)
	if dst == nil {
		n := 2
		for _, m := range ms {
			n += len(m.name) + m.end - m.start + 4
		}
		dst = make([]byte, 0, n)
	}
	dst = append(dst, '{')
	for i, m := range ms {
		if i > 0 && m.name == ms[i-1].name {
			continue
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = quote(dst, m.name)
		dst = append(dst, ':')
		dst = append(dst, c.buf[m.start:m.end]...)
	}
	c.ms = c.ms[:from]
	return append(dst, '}')
}

// fieldBit is the bit of encoder.fields for a member Event names; 0 for
// any other.
func fieldBit(key string) uint16 {
	switch key {
	case "actor":
		return 1 << 0
	case "session":
		return 1 << 1
	case "request":
		return 1 << 2
	case "tool":
		return 1 << 3
	case "outcome":
		return 1 << 4
	case "policy":
		return 1 << 5
	case "in_bytes":
		return 1 << 6
	case "out_bytes":
		return 1 << 7
	case "duration_us":
		return 1 << 8
	case "calls_left":
		return 1 << 9
	case "lost":
		return 1 << 10
	}
	return 0
}

// sortMembers sorts an object's members by name, stably, so that members
// of one name stay in the order given: by insertion, as an object has a
// few members and the kernel's come nearly in order.
func sortMembers(ms []member) {
	ascii := !slices.ContainsFunc(ms, func(m member) bool { return !m.ascii })
	less := func(a, b *member) bool {
		if ascii {
			return a.name < b.name
		}
		return compareNames(a.name, b.name) < 0
	}
	for i := 1; i < len(ms); i++ {
		m := ms[i]
		j := i
		for ; j > 0 && less(&m, &ms[j-1]); j-- {
			ms[j] = ms[j-1]
		}
		ms[j] = m
	}
}

// setField sets the Event field a top-level member names.
func setField(e *Event, key string, v slog.Value) {
	str := func() string {
		if v.Kind() == slog.KindString {
			return v.String()
		}
		return ""
	}
	num := func() int64 {
		switch v.Kind() {
		case slog.KindInt64:
			return v.Int64()
		case slog.KindUint64:
			return int64(min(v.Uint64(), math.MaxInt64))
		}
		return 0
	}
	switch key {
	case "actor":
		e.Actor = str()
	case "session":
		e.Session = str()
	case "request":
		e.Request = str()
	case "tool":
		e.Tool = str()
	case "outcome":
		e.Outcome = str()
	case "policy":
		e.Policy = str()
	case "in_bytes":
		e.InBytes = num()
	case "out_bytes":
		e.OutBytes = num()
	case "duration_us":
		e.DurationUS = num()
	case "calls_left":
		e.CallsLeft = num()
	case "lost":
		e.Lost = num()
	}
}

// validName is a member name as canonical JSON holds it: invalid UTF-8
// becomes U+FFFD, as quote writes it, so that two names that write alike
// are one name.
func validName(name string) string {
	if isASCII(name) || utf8.ValidString(name) {
		return name
	}
	return strings.ToValidUTF8(name, "\uFFFD")
}

// compareNames orders member names by their UTF-16 code units (RFC 8785
// section 3.2.3); for ASCII names that is byte order.
func compareNames(a, b string) int {
	if isASCII(a) && isASCII(b) {
		return strings.Compare(a, b)
	}
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// quote appends s as a canonical JSON string. Invalid UTF-8 becomes
// U+FFFD, as canonical JSON cannot hold it. Printable ASCII but for the
// quote and the backslash, what names and most values are, is appended
// as it is.
func quote(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			out, _ := jsontext.AppendQuote(dst, s)
			return out
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// maxExactInt is the largest integer every float64 up to it holds exactly:
// larger ones are written as strings, so the number means what was logged.
const maxExactInt = 1 << 53

// value appends one resolved value, canonically, to c.buf, and returns
// where it begins there (a group's members come before it); false for an
// empty group.
func (c *encoder) value(v slog.Value) (start int, ok bool) {
	start = len(c.buf)
	switch v.Kind() {
	case slog.KindString:
		c.buf = quote(c.buf, v.String())
	case slog.KindInt64:
		c.buf = appendInt(c.buf, v.Int64())
	case slog.KindUint64:
		if n := v.Uint64(); n < maxExactInt {
			c.buf = strconv.AppendUint(c.buf, n, 10)
		} else {
			c.buf = quote(c.buf, strconv.FormatUint(n, 10))
		}
	case slog.KindBool:
		c.buf = strconv.AppendBool(c.buf, v.Bool())
	case slog.KindDuration:
		c.buf = appendInt(c.buf, int64(v.Duration()))
	case slog.KindFloat64:
		c.buf = append(c.buf, float(v.Float64())...)
	case slog.KindTime:
		c.buf = append(c.buf, '"')
		c.buf = v.Time().UTC().AppendFormat(c.buf, time.RFC3339Nano)
		c.buf = append(c.buf, '"')
	case slog.KindGroup:
		from := len(c.ms)
		c.members(v.Group(), from)
		if len(c.ms) == from {
			return start, false
		}
		// The group's members are encoded; its object goes after them.
		start = len(c.buf)
		c.buf = c.object(c.buf, from)
	default:
		c.buf = append(c.buf, anyValue(v.Any())...)
	}
	return start, true
}

// appendInt appends n as a JSON number, or as a string past the integers
// every float64 holds exactly.
func appendInt(dst []byte, n int64) []byte {
	if n > -maxExactInt && n < maxExactInt {
		return strconv.AppendInt(dst, n, 10)
	}
	return quote(dst, strconv.FormatInt(n, 10))
}

// float encodes f as ECMAScript prints it; a non-finite f, which JSON
// cannot hold, as a string.
func float(f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return quote(nil, strconv.FormatFloat(f, 'g', -1, 64))
	}
	v := jsontext.Value(strconv.AppendFloat(nil, f, 'g', -1, 64))
	if v.Canonicalize() != nil {
		return quote(nil, strconv.FormatFloat(f, 'g', -1, 64))
	}
	return v
}

// anyValue encodes an error as its text and anything else as JSON made
// canonical, or as its printed form when it does not encode.
func anyValue(x any) []byte {
	if err, ok := x.(error); ok {
		return quote(nil, err.Error())
	}
	b, err := jsonv2.Marshal(x)
	if err == nil {
		v := jsontext.Value(b)
		if v.Canonicalize() == nil {
			return v
		}
	}
	return quote(nil, slog.AnyValue(x).String())
}
