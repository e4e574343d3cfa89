package textjson

import (
	"bytes"
	"context"
	"io"
	"math"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// maxDepth is the nesting bound every JSON input is held to.
const maxDepth = limits.JSONMaxDepth

// ctxCheckTokens is how many tokens pass between context checks.
const ctxCheckTokens = 1 << 14

// JSONOptions configure Validate, Decode and Canonical. The zero value is
// the default bound.
type JSONOptions struct {
	// MaxBytes bounds the input: zero means limits.JSONDefaultBytes; more
	// than limits.JSONMaxBytes is refused.
	MaxBytes int64
}

// Number is a JSON number exactly as written in the input.
type Number string

// String returns the literal.
func (n Number) String() string { return string(n) }

// Float64 returns n as the nearest 64-bit float.
func (n Number) Float64() (float64, error) { return strconv.ParseFloat(string(n), 64) }

// Int64 returns n as an int64; it fails for fractions, exponents and
// values out of range.
func (n Number) Int64() (int64, error) { return strconv.ParseInt(string(n), 10, 64) }

// MarshalJSON writes the literal unchanged.
func (n Number) MarshalJSON() ([]byte, error) { return []byte(n), nil }

// Stats describe a valid JSON value.
type Stats struct {
	// Bytes is the input size.
	Bytes int64 `json:"bytes"`
	// Kind of the top-level value: object, array, string, number, boolean
	// or null.
	Kind string `json:"kind"`
	// Values counts every value, nested ones included (member names are
	// not values).
	Values int64 `json:"values"`
	// Depth is the deepest nesting of objects and arrays (a scalar is 0).
	Depth int `json:"depth"`
}

// Validate checks that data is one strict JSON value (see the package
// documentation) without building it.
//
// Valid input takes a fast path: jsontext checks the grammar, names and
// UTF-8 at full speed, then one pass over the (now known valid) bytes
// measures depth and finds numbers to check. Anything that path refuses is
// walked token by token to locate the error.
func Validate(ctx context.Context, data []byte, opts *JSONOptions) (Stats, error) {
	var o JSONOptions
	if opts != nil {
		o = *opts
	}
	limit, err := maxBytes("JSON", o.MaxBytes, limits.JSONDefaultBytes, limits.JSONMaxBytes)
	if err == nil && int64(len(data)) <= limit && ctx.Err() == nil && jsontext.Value(data).IsValid() {
		if st, ok := measure(data); ok {
			return st, nil
		}
	}
	_, st, err := walk(ctx, data, opts, false)
	return st, err
}

// Decode parses data, held to the rules of Validate, into Go values: nil,
// bool, string, Number, []any and map[string]any. Member order is not kept
// (names are unique, so nothing is lost but order; Canonical gives a
// deterministic text).
func Decode(ctx context.Context, data []byte, opts *JSONOptions) (any, Stats, error) {
	return walk(ctx, data, opts, true)
}

// Canonical validates data like Validate and returns its canonical form:
// RFC 8785 (JCS) member order and string escaping with no whitespace, except
// that numbers keep their literal text instead of being rewritten as
// float64 (which would round large integers). Two texts with the same
// canonical form are the same JSON value with the same number literals. The
// result is never longer than data, so it is bounded by the same limit.
func Canonical(ctx context.Context, data []byte, opts *JSONOptions) ([]byte, Stats, error) {
	st, err := Validate(ctx, data, opts)
	if err != nil {
		return nil, st, err
	}
	out, err := jsontext.AppendFormat(make([]byte, 0, len(data)), data, jsontext.ReorderRawObjects(true))
	if err != nil {
		// walk accepted what the formatter refused: a bug, not bad input.
		return nil, st, fault.Wrap(fault.Internal, err, "canonical formatting failed")
	}
	return out, st, nil
}

type frame struct {
	obj   map[string]any
	arr   []any
	name  string
	isObj bool
}

// walk reads data token by token, enforcing the bounds, and builds the
// value when build is set. On failure only Stats.Bytes is set.
func walk(ctx context.Context, data []byte, opts *JSONOptions, build bool) (any, Stats, error) {
	v, st, err := walkTokens(ctx, data, opts, build)
	if err != nil {
		return nil, Stats{Bytes: st.Bytes}, err
	}
	return v, st, nil
}

func walkTokens(ctx context.Context, data []byte, opts *JSONOptions, build bool) (any, Stats, error) {
	var o JSONOptions
	if opts != nil {
		o = *opts
	}
	st := Stats{Bytes: int64(len(data))}
	limit, err := maxBytes("JSON", o.MaxBytes, limits.JSONDefaultBytes, limits.JSONMaxBytes)
	if err != nil {
		return nil, st, err
	}
	if st.Bytes > limit {
		return nil, st, fault.LimitExceeded("JSON input bytes", limit, st.Bytes)
	}
	if bytes.HasPrefix(data, []byte("\uFEFF")) {
		return nil, st, newSyntaxError(data, 0, "JSON", ErrByteOrderMark)
	}
	w := &walker{data: data, d: jsontext.NewDecoder(bytes.NewBuffer(data)), build: build, st: &st}
	if err := w.value(ctx); err != nil {
		return nil, st, err
	}
	// One value only: anything after it but whitespace is an error.
	end := w.d.InputOffset()
	if _, err := w.d.ReadToken(); err != io.EOF {
		rest := data[end:]
		off := end + int64(len(rest)-len(bytes.TrimLeft(rest, " \t\r\n")))
		return nil, st, newSyntaxError(data, off, "JSON", ErrTrailingData)
	}
	st.Kind = kindName(data)
	return w.root, st, nil
}

// walker reads one JSON value token by token, counting values and depth
// and, when build is set, building the value.
type walker struct {
	data  []byte
	d     *jsontext.Decoder
	build bool
	st    *Stats
	root  any
	// inObj records, per open container, whether it is an object;
	// expectName is whether the next string in it is a member name.
	inObj      []bool
	expectName bool
	frames     []frame
}

// value reads tokens until the first value is complete.
func (w *walker) value(ctx context.Context) error {
	for n := 0; ; n++ {
		if n%ctxCheckTokens == 0 {
			if err := ctx.Err(); err != nil {
				return fault.As(err)
			}
		}
		before := w.d.InputOffset()
		tok, err := w.d.ReadToken()
		if err != nil {
			if err == io.EOF {
				return newSyntaxError(w.data, w.st.Bytes, "JSON", ErrUnexpectedEnd)
			}
			return fromParser(w.data, err)
		}
		done, err := w.token(tok, before)
		if err != nil || done {
			return err
		}
	}
}

// token takes one token that started after offset before; done is true
// once the outermost value is complete.
func (w *walker) token(tok jsontext.Token, before int64) (done bool, err error) {
	switch kind := tok.Kind(); kind {
	case '{', '[':
		return false, w.open(kind)
	case '}', ']':
		w.close()
	case '"':
		if w.expectName {
			if w.build {
				w.frames[len(w.frames)-1].name = tok.String()
			}
			w.expectName = false
			return false, nil
		}
		w.st.Values++
		if w.build {
			w.add(tok.String())
		}
	case '0':
		lit, err := w.number(before)
		if err != nil {
			return false, err
		}
		w.st.Values++
		if w.build {
			w.add(lit)
		}
	case 't', 'f':
		w.st.Values++
		if w.build {
			w.add(kind == 't')
		}
	case 'n':
		w.st.Values++
		if w.build {
			w.add(nil)
		}
	}
	if len(w.inObj) == 0 {
		return true, nil
	}
	w.expectName = w.inObj[len(w.inObj)-1]
	return false, nil
}

func (w *walker) open(kind jsontext.Kind) error {
	w.st.Values++
	w.inObj = append(w.inObj, kind == '{')
	w.expectName = kind == '{'
	if len(w.inObj) > maxDepth {
		se := newSyntaxError(w.data, w.d.InputOffset()-1, "JSON", ErrTooDeep)
		se.Pointer = string(w.d.StackPointer())
		return se
	}
	w.st.Depth = max(w.st.Depth, len(w.inObj))
	if w.build {
		if kind == '{' {
			w.frames = append(w.frames, frame{obj: map[string]any{}, isObj: true})
		} else {
			w.frames = append(w.frames, frame{arr: []any{}})
		}
	}
	return nil
}

func (w *walker) close() {
	w.inObj = w.inObj[:len(w.inObj)-1]
	if !w.build {
		return
	}
	top := w.frames[len(w.frames)-1]
	w.frames = w.frames[:len(w.frames)-1]
	if top.isObj {
		w.add(top.obj)
	} else {
		w.add(top.arr)
	}
}

// number is the literal of the number token that started after before,
// checked to be finite.
func (w *walker) number(before int64) (Number, error) {
	// The literal's bytes, without copying: the token starts after the
	// separators and whitespace that follow the previous one.
	start := before
	for c := w.data[start]; c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',' || c == ':'; c = w.data[start] {
		start++
	}
	lit := w.data[start:w.d.InputOffset()]
	if !finite(lit) {
		se := newSyntaxError(w.data, start, "JSON", ErrNonFinite)
		se.Pointer = string(w.d.StackPointer())
		return "", se
	}
	if !w.build {
		return "", nil
	}
	return Number(lit), nil
}

// add places a finished value in its container.
func (w *walker) add(v any) {
	if len(w.frames) == 0 {
		w.root = v
		return
	}
	top := &w.frames[len(w.frames)-1]
	if top.isObj {
		top.obj[top.name] = v
	} else {
		top.arr = append(top.arr, v)
	}
}

// finite reports whether a number literal is finite as a float64. Most
// literals are decided without parsing: without an exponent, a number with
// fewer than 309 digits is below math.MaxFloat64.
func finite(lit []byte) bool {
	if len(lit) < 309 && bytes.IndexAny(lit, "eE") < 0 {
		return true
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	return err == nil || !math.IsInf(f, 0)
}

// kindName names the top-level value of a valid text.
func kindName(data []byte) string {
	t := bytes.TrimLeft(data, " \t\r\n")
	switch t[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// measure computes the Stats of a text jsontext has validated, and reports
// false when the text is too deep or holds a non-finite number (walk then
// locates the error). It is not a parser: it relies on the text being
// valid, so it only needs to skip strings and find the structural bytes.
func measure(data []byte) (Stats, bool) {
	st := Stats{Bytes: int64(len(data)), Kind: kindName(data)}
	depth := 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			end := stringEnd(data, i+1)
			i = end
			// A member name is followed by ':'; a value is not.
			j := end + 1
			for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\r' || data[j] == '\n') {
				j++
			}
			if j == len(data) || data[j] != ':' {
				st.Values++
			}
		case '{', '[':
			depth++
			if depth > maxDepth {
				return st, false
			}
			st.Depth = max(st.Depth, depth)
			st.Values++
		case '}', ']':
			depth--
		case 't', 'n':
			st.Values++
			i += 3
		case 'f':
			st.Values++
			i += 4
		case ' ', '\t', '\r', '\n', ',', ':':
		default: // a number
			j, exp := i+1, false
			for ; j < len(data); j++ {
				k := numberByte[data[j]]
				if k == 0 {
					break
				}
				exp = exp || k == 2
			}
			if (exp || j-i >= 309) && !finite(data[i:j]) {
				return st, false
			}
			st.Values++
			i = j - 1
		}
	}
	return st, true
}

// stringEnd returns the index of the quote closing the string whose
// content starts at i. Strings are mostly short, where a byte loop beats
// a call to bytes.IndexByte.
func stringEnd(data []byte, i int) int {
	for {
		switch data[i] {
		case '"':
			return i
		case '\\':
			i++ // the escaped byte cannot end the string
		}
		i++
	}
}

// numberByte is 1 for the bytes of a number, 2 for an exponent marker.
var numberByte = func() (t [256]uint8) {
	for _, c := range "0123456789+-." {
		t[c] = 1
	}
	t['e'], t['E'] = 2, 2
	return t
}()
