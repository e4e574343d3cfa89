package textjson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

var bg = context.Background()

func TestJSONFixtures(t *testing.T) {
	cases := []struct {
		file      string
		code      fault.Code // "" for valid
		reason    error
		line, col int
		canonical string
	}{
		{file: "exact-numbers.json", canonical: `{"exp":1.5E+300,"id":12345678901234567890123456789,"neg":-0,"ratio":0.1000000000000000055511151231257827,"tiny":1e-400}`},
		{file: "unicode.json", canonical: `{"emoji":"😀","esc":"/\b\f\n\r\t\"\\","name":"café","raw":"日本語"}`},
		{file: "duplicate-deep.json", code: fault.InvalidInput, reason: ErrDuplicateName, line: 4, col: 32},
		{file: "nan.json", code: fault.InvalidInput, reason: ErrNonFinite, line: 1, col: 10},
		{file: "overflow.json", code: fault.InvalidInput, reason: ErrNonFinite, line: 2, col: 2},
		{file: "mismatched.json", code: fault.InvalidInput, line: 1, col: 12},
		{file: "bom.json", code: fault.InvalidInput, reason: ErrByteOrderMark, line: 1, col: 1},
		{file: "bad-utf8.json", code: fault.InvalidInput, reason: ErrInvalidUTF8, line: 1, col: 9},
		{file: "two-values.json", code: fault.InvalidInput, reason: ErrTrailingData, line: 2, col: 1},
		{file: "lone-surrogate.json", code: fault.InvalidInput, line: 1, col: 8},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "json", c.file))
			if err != nil {
				t.Fatal(err)
			}
			canon, _, err := Canonical(bg, data, nil)
			if c.code == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if string(canon) != c.canonical {
					t.Fatalf("canonical\n got %s\nwant %s", canon, c.canonical)
				}
				return
			}
			if fault.CodeOf(err) != c.code {
				t.Fatalf("code %q, want %q (err %v)", fault.CodeOf(err), c.code, err)
			}
			if c.reason != nil && !errors.Is(err, c.reason) {
				t.Fatalf("err %v is not %v", err, c.reason)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("no SyntaxError in %v", err)
			}
			if se.Line != c.line || se.Column != c.col {
				t.Fatalf("at line %d column %d, want %d:%d (%v)", se.Line, se.Column, c.line, c.col, err)
			}
			if !strings.Contains(err.Error(), "line ") || !strings.Contains(fault.As(err).Message, "column") {
				t.Fatalf("message lacks position: %v", err)
			}
		})
	}
}

func TestJSONCases(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		code   fault.Code
		reason error
		off    int64
	}{
		{"object", `{"a":[1,"x",true,false,null,{}]}`, "", nil, 0},
		{"scalar string", `"hi"`, "", nil, 0},
		{"scalar number with space", " 42 \n", "", nil, 0},
		{"big integer", `123456789012345678901234567890`, "", nil, 0},
		{"largest finite", `1.7976931348623157e308`, "", nil, 0},
		{"underflow is finite", `1e-99999`, "", nil, 0},
		{"308 digits", strings.Repeat("9", 308), "", nil, 0},
		{"309 digits", "1" + strings.Repeat("0", 308), "", nil, 0},
		{"309 nines overflow", strings.Repeat("9", 309), fault.InvalidInput, ErrNonFinite, 0},
		{"400 digits overflow", strings.Repeat("9", 400), fault.InvalidInput, ErrNonFinite, 0},
		{"exponent overflow", `[1,1e309]`, fault.InvalidInput, ErrNonFinite, 3},
		{"negative overflow", `{"a":-2e308}`, fault.InvalidInput, ErrNonFinite, 5},
		{"Infinity", `[Infinity]`, fault.InvalidInput, ErrNonFinite, 1},
		{"-Infinity", `[-Infinity]`, fault.InvalidInput, ErrNonFinite, 1},
		{"duplicate top", `{"a":1,"b":2,"a":3}`, fault.InvalidInput, ErrDuplicateName, 13},
		{"duplicate after escape", `{"a":1,"\u0061":2}`, fault.InvalidInput, ErrDuplicateName, 7},
		{"same name in sibling objects", `[{"a":1},{"a":2}]`, "", nil, 0},
		{"empty", ``, fault.InvalidInput, ErrUnexpectedEnd, 0},
		{"whitespace only", " \n ", fault.InvalidInput, ErrUnexpectedEnd, 3},
		{"truncated", `{"a":[1,2`, fault.InvalidInput, ErrUnexpectedEnd, 9},
		{"trailing garbage", `{} x`, fault.InvalidInput, ErrTrailingData, 3},
		{"second value", `[] []`, fault.InvalidInput, ErrTrailingData, 3},
		{"invalid utf8 outside string", "[1,\xff]", fault.InvalidInput, ErrInvalidUTF8, 3},
		{"invalid utf8 in name", "{\"\xc0\":1}", fault.InvalidInput, ErrInvalidUTF8, 2},
		{"single quotes", `{'a':1}`, fault.InvalidInput, nil, 1},
		{"trailing comma", `[1,]`, fault.InvalidInput, nil, 2},
		{"leading zero", `01`, fault.InvalidInput, nil, 1},
		{"control char in string", "\"a\x01\"", fault.InvalidInput, nil, 2},
		{"comment", `{} // c`, fault.InvalidInput, ErrTrailingData, 3},
		{"escaped quotes and backslashes", `{"a\\":"b\"c\\","\\\"":["]",":","\\"]}`, "", nil, 0},
		{"colon after a value string", `{"a" : "b" , "c":["d" , "e"]}`, "", nil, 0},
		{"exponent number deep in an array", `[[1,[2e5,-0.5E-3]]]`, "", nil, 0},
		{"exponent overflow after escapes", `["\"[",1e400]`, fault.InvalidInput, ErrNonFinite, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := Validate(bg, []byte(c.in), nil)
			_, dst, derr := Decode(bg, []byte(c.in), nil)
			if fault.CodeOf(err) != c.code || fault.CodeOf(derr) != c.code {
				t.Fatalf("Validate %v, Decode %v; want code %q", err, derr, c.code)
			}
			if st != dst {
				t.Fatalf("Validate stats %+v, Decode stats %+v", st, dst)
			}
			if c.code == "" {
				if st.Kind == "" || st.Bytes != int64(len(c.in)) {
					t.Fatalf("stats %+v", st)
				}
				return
			}
			if c.reason != nil && !errors.Is(err, c.reason) {
				t.Fatalf("err %v is not %v", err, c.reason)
			}
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset != c.off {
				t.Fatalf("err %v: offset %+v, want %d", err, se, c.off)
			}
		})
	}
}

func TestDecodeValues(t *testing.T) {
	v, st, err := Decode(bg, []byte(`{"n":12345678901234567890123,"f":0.10,"s":"x","a":[true,null,{"k":[]}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if m["n"] != Number("12345678901234567890123") || m["f"] != Number("0.10") || m["s"] != "x" {
		t.Fatalf("values %#v", m)
	}
	a := m["a"].([]any)
	if a[0] != true || a[1] != nil || len(a[2].(map[string]any)["k"].([]any)) != 0 {
		t.Fatalf("array %#v", a)
	}
	if st.Values != 9 || st.Depth != 4 || st.Kind != "object" {
		t.Fatalf("stats %+v", st)
	}
	if n, err := m["n"].(Number).Float64(); err != nil || n != 1.2345678901234568e22 {
		t.Fatalf("Float64 %v %v", n, err)
	}
	if _, err := m["n"].(Number).Int64(); err == nil {
		t.Fatal("Int64 of a 23-digit number succeeded")
	}
	out, err := json.Marshal(v)
	if err != nil || !bytes.Contains(out, []byte(`"n":12345678901234567890123`)) {
		t.Fatalf("marshal %s %v", out, err)
	}
}

func nested(depth int) []byte {
	return []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
}

func TestDepthLimitEdge(t *testing.T) {
	if _, err := Validate(bg, nested(limits.JSONMaxDepth), nil); err != nil {
		t.Fatalf("depth %d: %v", limits.JSONMaxDepth, err)
	}
	mixed := strings.Repeat(`{"a":`, limits.JSONMaxDepth-1) + `[]` + strings.Repeat("}", limits.JSONMaxDepth-1)
	if _, _, err := Decode(bg, []byte(mixed), nil); err != nil {
		t.Fatalf("mixed depth %d: %v", limits.JSONMaxDepth, err)
	}
	_, err := Validate(bg, nested(limits.JSONMaxDepth+1), nil)
	if fault.CodeOf(err) != fault.Limit || !errors.Is(err, ErrTooDeep) {
		t.Fatalf("depth %d: %v", limits.JSONMaxDepth+1, err)
	}
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != limits.JSONMaxDepth {
		t.Fatalf("offset %+v", se)
	}
}

// TestDeepNestingAdversarial: 10,000 levels fail with limit early, in
// bounded memory.
func TestDeepNestingAdversarial(t *testing.T) {
	for _, in := range [][]byte{nested(10_000), []byte(strings.Repeat(`{"a":`, 10_000)), []byte(strings.Repeat("[", 10_000_000))} {
		var err error
		grew := testkit.Allocated(func() { _, _, err = Decode(bg, in, nil) })
		if fault.CodeOf(err) != fault.Limit || !errors.Is(err, ErrTooDeep) {
			t.Fatalf("got %v", err)
		}
		if grew > 4<<20 {
			t.Fatalf("allocated %d bytes to refuse deep nesting", grew)
		}
	}
}

func TestJSONByteLimitEdge(t *testing.T) {
	// Default bound: a string value of exactly JSONDefaultBytes passes, one
	// byte more fails before parsing.
	doc := make([]byte, limits.JSONDefaultBytes)
	for i := range doc {
		doc[i] = 'a'
	}
	doc[0], doc[len(doc)-1] = '"', '"'
	if _, err := Validate(bg, doc, nil); err != nil {
		t.Fatalf("at the default bound: %v", err)
	}
	doc = append(doc, ' ')
	if _, err := Validate(bg, doc, nil); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one past the default bound: %v", err)
	}
	// Configured bound: exact and one past.
	small := []byte(`[1,2,3]`)
	if _, err := Validate(bg, small, &JSONOptions{MaxBytes: int64(len(small))}); err != nil {
		t.Fatal(err)
	}
	if _, err := Validate(bg, small, &JSONOptions{MaxBytes: int64(len(small)) - 1}); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("configured bound: %v", err)
	}
	// The hard bound on configuration.
	if _, err := Validate(bg, small, &JSONOptions{MaxBytes: limits.JSONMaxBytes}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []int64{limits.JSONMaxBytes + 1, -1} {
		if _, err := Validate(bg, small, &JSONOptions{MaxBytes: bad}); err == nil {
			t.Fatalf("MaxBytes %d accepted", bad)
		}
	}
}

func TestCanonicalProperties(t *testing.T) {
	in := []byte(" {\"z\" : [ 1.0 , 2E3 ], \"a\":\"\\u0041\\/\\u00e9\\ud83d\\ude00\", \"\\u00e9\":{}, \"A\":null}\n")
	out, _, err := Canonical(bg, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"A":null,"a":"A/é😀","z":[1.0,2E3],"é":{}}`
	if string(out) != want {
		t.Fatalf("got %s want %s", out, want)
	}
	again, _, err := Canonical(bg, out, nil)
	if err != nil || !bytes.Equal(again, out) {
		t.Fatalf("not a fixed point: %s %v", again, err)
	}
	if !bytes.Equal(in[:2], []byte(" {")) {
		t.Fatal("input was modified")
	}
}

func TestContextCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := Validate(ctx, []byte(`[1]`), nil); fault.CodeOf(err) != fault.Unavailable {
		t.Fatalf("got %v", err)
	}
}
