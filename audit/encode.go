package audit

import (
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The encoder writes a slog record in canonical JSON directly (RFC 8785:
// members sorted by their UTF-16 code units, minimal string escapes,
// numbers as ECMAScript prints them), rather than encoding it as JSON and
// canonicalizing that: the record's values are already typed, and this is
// on every call's path. The tests hold its output to journal.Canonicalize.

// member is one encoded name and value of an object being built.
type member struct {
	name  string
	value []byte
}

// frame is a handler's attributes at one depth: those of the group it
// opened (none for the first frame) given before the record's.
type frame struct {
	group string
	attrs []slog.Attr
}

// encodeRecord is r as a canonical JSON object, inside the handler's
// frames, and sets the fields of e its top-level members name.
func encodeRecord(e *Event, r slog.Record, frames []frame) []byte {
	top := []member{
		{"time", quote(nil, r.Time.UTC().Format(time.RFC3339Nano))},
		{"level", quote(nil, r.Level.String())},
		{"msg", quote(nil, r.Message)},
	}
	e.Time, e.Msg = r.Time, r.Message
	attrs := make([]slog.Attr, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	for i := len(frames) - 1; i >= 1; i-- {
		attrs = []slog.Attr{{Key: frames[i].group, Value: slog.GroupValue(append(slices.Clip(frames[i].attrs), attrs...)...)}}
	}
	if len(frames) > 0 {
		for _, a := range frames[0].attrs {
			top = addMember(top, a, e)
		}
	}
	for _, a := range attrs {
		top = addMember(top, a, e)
	}
	return object(top)
}

// addMember adds a to the top-level members and, when it is one of the
// members Event names, sets it on e.
func addMember(top []member, a slog.Attr, e *Event) []member {
	v := a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return top
	}
	if a.Key == "" && v.Kind() == slog.KindGroup {
		for _, m := range members(v.Group(), nil) {
			top = appendUnique(top, m)
		}
		return top
	}
	key := validName(a.Key)
	if !hasMember(top, key) {
		setField(e, key, v)
	}
	enc := value(v)
	if enc == nil {
		return top
	}
	return appendUnique(top, member{key, enc})
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
func validName(name string) string { return strings.ToValidUTF8(name, "\uFFFD") }

func hasMember(ms []member, name string) bool {
	for _, m := range ms {
		if m.name == name {
			return true
		}
	}
	return false
}

// appendUnique adds m unless a member of its name is there: the first
// keeps its place (the record's time, level and message come first), so
// the object has no duplicate names, which canonical JSON forbids.
func appendUnique(ms []member, m member) []member {
	if hasMember(ms, m.name) {
		return ms
	}
	return append(ms, m)
}

// members encodes attributes as an object's members, as slog's JSON
// handler would: an empty attribute skipped, an empty-keyed group
// inlined, empty groups left out.
func members(attrs []slog.Attr, ms []member) []member {
	for _, a := range attrs {
		v := a.Value.Resolve()
		if a.Equal(slog.Attr{}) {
			continue
		}
		if a.Key == "" && v.Kind() == slog.KindGroup {
			ms = members(v.Group(), ms)
			continue
		}
		if enc := value(v); enc != nil {
			ms = appendUnique(ms, member{validName(a.Key), enc})
		}
	}
	return ms
}

// object writes members sorted, as canonical JSON orders them.
func object(ms []member) []byte {
	slices.SortFunc(ms, func(a, b member) int { return compareNames(a.name, b.name) })
	n := 2
	for _, m := range ms {
		n += len(m.name) + len(m.value) + 4
	}
	out := make([]byte, 0, n)
	out = append(out, '{')
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		out = quote(out, m.name)
		out = append(out, ':')
		out = append(out, m.value...)
	}
	return append(out, '}')
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
// U+FFFD, as canonical JSON cannot hold it.
func quote(dst []byte, s string) []byte {
	out, _ := jsontext.AppendQuote(dst, s)
	return out
}

// maxExactInt is the largest integer every float64 up to it holds exactly:
// larger ones are written as strings, so the number means what was logged.
const maxExactInt = 1 << 53

// value encodes one resolved value canonically, nil for an empty group.
func value(v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return quote(nil, v.String())
	case slog.KindInt64:
		if n := v.Int64(); n > -maxExactInt && n < maxExactInt {
			return strconv.AppendInt(nil, n, 10)
		}
		return quote(nil, strconv.FormatInt(v.Int64(), 10))
	case slog.KindUint64:
		if n := v.Uint64(); n < maxExactInt {
			return strconv.AppendUint(nil, n, 10)
		}
		return quote(nil, strconv.FormatUint(v.Uint64(), 10))
	case slog.KindBool:
		return strconv.AppendBool(nil, v.Bool())
	case slog.KindDuration:
		return value(slog.Int64Value(int64(v.Duration())))
	case slog.KindFloat64:
		return float(v.Float64())
	case slog.KindTime:
		return quote(nil, v.Time().UTC().Format(time.RFC3339Nano))
	case slog.KindGroup:
		ms := members(v.Group(), nil)
		if len(ms) == 0 {
			return nil
		}
		return object(ms)
	}
	return anyValue(v.Any())
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
