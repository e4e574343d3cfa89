package script

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"go.starlark.net/starlark"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// The conversions between Starlark values and JSON are written here rather
// than taken from go.starlark.net/lib/json because that encoder has no
// output bound: a value that shares one list many times over (x = [big]*n,
// nested) encodes to exponentially more bytes than it occupies. toJSON
// stops at its byte budget, so its work is bounded by the budget too.

// toJSON encodes v (None, bool, int, float, string, list, tuple, dict with
// string keys) as JSON of at most maxBytes, nested at most
// limits.JSONMaxDepth deep. Dict members keep insertion order.
func toJSON(v starlark.Value, maxBytes int64, what string) ([]byte, error) {
	e := &encoder{max: maxBytes, what: what}
	if err := e.value(v, 0); err != nil {
		return nil, err
	}
	return e.buf, nil
}

type encoder struct {
	buf  []byte
	max  int64
	what string
}

var errBudget = errors.New("budget")

func (e *encoder) value(v starlark.Value, depth int) error {
	if depth > limits.JSONMaxDepth {
		return fault.New(fault.Limit, "%s: nested deeper than %d (a list or dict that contains itself?)", e.what, limits.JSONMaxDepth)
	}
	switch x := v.(type) {
	case *tainted:
		return e.value(x.v, depth)
	case unbound:
		return fault.New(fault.InvalidInput, "%s: %s", e.what, errUnbound)
	case starlark.NoneType:
		e.buf = append(e.buf, "null"...)
	case starlark.Bool:
		e.buf = strconv.AppendBool(e.buf, bool(x))
	case starlark.Int:
		e.buf = append(e.buf, x.String()...)
	case starlark.Float:
		f := float64(x)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fault.New(fault.InvalidInput, "%s: %v has no JSON form", e.what, f)
		}
		e.buf = strconv.AppendFloat(e.buf, f, 'g', -1, 64)
	case starlark.String:
		if err := e.check(int64(len(x)) + 2); err != nil {
			return err
		}
		var err error
		if e.buf, err = jsontext.AppendQuote(e.buf, string(x)); err != nil {
			return fault.New(fault.InvalidInput, "%s: string is not valid UTF-8", e.what)
		}
	case *starlark.List:
		return e.seq(x, x.Len(), depth)
	case starlark.Tuple:
		return e.seq(x, x.Len(), depth)
	case *starlark.Dict:
		e.buf = append(e.buf, '{')
		for i, kv := range x.Items() {
			k, ok := kv[0].(starlark.String)
			if !ok {
				return fault.New(fault.InvalidInput, "%s: dict key %s is not a string", e.what, kv[0].Type())
			}
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(k, depth+1); err != nil {
				return err
			}
			e.buf = append(e.buf, ':')
			if err := e.value(kv[1], depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
	default:
		return fault.New(fault.InvalidInput, "%s: a %s has no JSON form (use None, bool, int, float, string, list, tuple or dict)", e.what, v.Type())
	}
	return e.check(0)
}

func (e *encoder) seq(x starlark.Indexable, n, depth int) error {
	e.buf = append(e.buf, '[')
	for i := range n {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.value(x.Index(i), depth+1); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, ']')
	return e.check(0)
}

// check fails once the output, plus more bytes about to be added, would
// exceed the budget.
func (e *encoder) check(more int64) error {
	if int64(len(e.buf))+more > e.max {
		return fault.LimitExceeded(e.what+" bytes", e.max, 0)
	}
	return nil
}

// fromJSON decodes JSON into Starlark values: objects become dicts (member
// order kept), arrays lists, integers ints (any size), other numbers
// floats. Duplicate member names and invalid UTF-8 are refused; nesting is
// bounded by limits.JSONMaxDepth.
func fromJSON(data []byte) (starlark.Value, error) {
	d := jsontext.NewDecoder(bytes.NewReader(data))
	v, err := decodeValue(d)
	if err != nil {
		return nil, fault.Wrap(fault.Integrity, err, "tool result is not valid JSON")
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return nil, fault.New(fault.Integrity, "tool result has data after its JSON value")
	}
	return v, nil
}

func decodeValue(d *jsontext.Decoder) (starlark.Value, error) {
	tok, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	if d.StackDepth() > limits.JSONMaxDepth {
		return nil, fmt.Errorf("nested deeper than %d", limits.JSONMaxDepth)
	}
	switch tok.Kind() {
	case 'n':
		return starlark.None, nil
	case 't', 'f':
		return starlark.Bool(tok.Bool()), nil
	case '"':
		return starlark.String(tok.String()), nil
	case '0':
		raw := tok.String()
		if !strings.ContainsAny(raw, ".eE") {
			if i, ok := new(big.Int).SetString(raw, 10); ok {
				return starlark.MakeBigInt(i), nil
			}
		}
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return nil, err
		}
		return starlark.Float(f), nil
	case '[':
		var elems []starlark.Value
		for d.PeekKind() != ']' {
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			elems = append(elems, v)
		}
		if _, err := d.ReadToken(); err != nil {
			return nil, err
		}
		return starlark.NewList(elems), nil
	case '{':
		dict := starlark.NewDict(0)
		for d.PeekKind() != '}' {
			k, err := d.ReadToken()
			if err != nil {
				return nil, err
			}
			key := starlark.String(k.String()) // before the next read voids k
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			if err := dict.SetKey(key, v); err != nil {
				return nil, err
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return nil, err
		}
		return dict, nil
	}
	return nil, errors.New("unexpected JSON token")
}
