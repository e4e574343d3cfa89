package kernel

import (
	"bytes"
	"log/slog"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/capkit/capkit/kernel/catalog"
)

// The audit trail records the shape of a call's arguments and never their
// values: for each top-level member the tool's input schema declares, its
// JSON type and, for a string, an array or an object, its length (bytes of
// the string, elements, members). What sits inside arrays and objects is
// not named (an object's member names may be data), and members the schema
// does not declare are only counted, under "*": their names are the
// caller's text. A path, a pattern, a file's content or a number given
// never reaches the trail.

// shapeReader is a pooled decoder and the reader it decodes from: a
// decoder's buffers are most of its cost.
type shapeReader struct {
	r   bytes.Reader
	dec *jsontext.Decoder
}

var shapeReaders = sync.Pool{New: func() any {
	s := &shapeReader{}
	s.dec = jsontext.NewDecoder(&s.r)
	return s
}}

// argShape is the "shape" attribute of args, arguments that were
// validated against entry's input schema (one JSON object).
func argShape(entry *catalog.Entry, args []byte) slog.Attr {
	in, _, err := entry.Schemas()
	if err != nil || in == nil {
		return slog.Attr{Key: "shape", Value: slog.GroupValue()}
	}
	sr := shapeReaders.Get().(*shapeReader)
	defer shapeReaders.Put(sr)
	sr.r.Reset(args)
	dec := sr.dec
	dec.Reset(&sr.r)
	defer sr.r.Reset(nil)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return slog.Attr{Key: "shape", Value: slog.GroupValue()}
	}
	var attrs []slog.Attr
	undeclared := 0
	for dec.PeekKind() == '"' {
		name, err := dec.ReadValue()
		if err != nil {
			break
		}
		key, ok := memberName(name)
		if _, declared := in.Properties[key]; !ok || !declared {
			undeclared++
			if dec.SkipValue() != nil {
				break
			}
			continue
		}
		shape, err := valueShape(dec)
		if err != nil {
			break
		}
		attrs = append(attrs, slog.String(key, shape))
	}
	if undeclared > 0 {
		attrs = append(attrs, slog.String("*", "undeclared:"+strconv.Itoa(undeclared)))
	}
	return slog.Attr{Key: "shape", Value: slog.GroupValue(attrs...)}
}

// memberName is a raw member name (quoted, as read) unquoted; ok is false
// when it cannot be.
func memberName(raw jsontext.Value) (string, bool) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	b, err := jsontext.AppendUnquote(nil, raw)
	return string(b), err == nil
}

// valueShape reads the next value and says its type and length: "string:12",
// "array:3", "object:2", "number", "boolean", "null".
func valueShape(dec *jsontext.Decoder) (string, error) {
	switch kind := dec.PeekKind(); kind {
	case '"':
		v, err := dec.ReadValue()
		if err != nil {
			return "", err
		}
		return "string:" + strconv.Itoa(stringBytes(v)), nil
	case '[', '{':
		if _, err := dec.ReadToken(); err != nil {
			return "", err
		}
		n := 0
		end, what := jsontext.Kind(']'), "array:"
		if kind == '{' {
			end, what = '}', "object:"
		}
		for dec.PeekKind() != end {
			if kind == '{' {
				if _, err := dec.ReadValue(); err != nil { // the name
					return "", err
				}
			}
			if err := dec.SkipValue(); err != nil {
				return "", err
			}
			n++
		}
		if _, err := dec.ReadToken(); err != nil {
			return "", err
		}
		return what + strconv.Itoa(n), nil
	case 't', 'f':
		return "boolean", dec.SkipValue()
	case 'n':
		return "null", dec.SkipValue()
	default:
		return "number", dec.SkipValue()
	}
}

// stringBytes is the length in bytes of the string a raw JSON string
// literal (valid, quoted) denotes, without unescaping it into memory.
func stringBytes(raw []byte) int {
	raw = raw[1 : len(raw)-1]
	n := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			n++
			continue
		}
		i++
		if raw[i] != 'u' {
			n++
			continue
		}
		r := hex4(raw[i+1 : i+5])
		i += 4
		if r >= 0xD800 && r < 0xDC00 && i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
			if lo := hex4(raw[i+3 : i+7]); lo >= 0xDC00 && lo < 0xE000 {
				n += 4
				i += 6
				continue
			}
		}
		if r >= 0xD800 && r < 0xE000 {
			r = utf8.RuneError // a lone surrogate decodes to U+FFFD
		}
		n += utf8.RuneLen(r)
	}
	return n
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		default:
			r = r<<4 | rune(c-'A'+10)
		}
	}
	return r
}
