package tabular

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
)

var bg = context.Background()

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	return testkit.ReadFile(t, "testdata", "csv", name)
}

func TestFixtures(t *testing.T) {
	caRows := [][]string{{"1", "Ann", "CA"}, {"3", "Cy", "CA"}}
	cases := []struct {
		file    string
		opts    Options
		code    fault.Code
		msg     string
		dialect Dialect
		rows    [][]string
		scanned int64
		bom     bool
	}{
		{file: "comma.csv", opts: Options{Filter: []Condition{{Column: "state", Value: "CA"}}}, dialect: Comma, rows: caRows, scanned: 3},
		{file: "pipe.csv", opts: Options{Filter: []Condition{{Column: "state", Value: "CA"}}}, dialect: Pipe, rows: caRows, scanned: 3},
		{file: "tab.tsv", opts: Options{Filter: []Condition{{Column: "state", Value: "CA"}}}, dialect: Tab, rows: caRows, scanned: 3},
		{file: "tab.tsv", opts: Options{Dialect: Tab, Columns: []string{"name"}}, dialect: Tab, rows: [][]string{{"Ann"}, {"Bob"}, {"Cy"}}, scanned: 3},
		{file: "pipe-with-commas.csv", dialect: Pipe, rows: [][]string{{"Paris", "a, b, c"}, {"Rome", "x, y"}}, scanned: 2},
		{file: "quoted.csv", opts: Options{Columns: []string{"note"}}, dialect: Comma, rows: [][]string{{"hello, world"}, {"line one\r\nline two"}, {`she said "hi"`}}, scanned: 3},
		{file: "bom.csv", opts: Options{Columns: []string{"id"}}, dialect: Comma, rows: [][]string{{"1"}}, scanned: 1, bom: true},
		{file: "blank-lines.csv", opts: Options{Columns: []string{"name"}}, dialect: Comma, rows: [][]string{{"Ann"}, {"Bob"}}, scanned: 2},
		{file: "dup-header.csv", opts: Options{Columns: []string{"b"}}, dialect: Comma, rows: [][]string{{"2"}}, scanned: 1},
		{file: "dup-header.csv", opts: Options{Columns: []string{"a"}}, code: fault.InvalidInput, msg: "more than once"},
		{file: "comma.csv", opts: Options{Columns: []string{"zip"}}, code: fault.InvalidInput, msg: `column "zip" is not in the header`},
		{file: "comma.csv", opts: Options{Filter: []Condition{{Column: "state", Op: "lt", Value: "x"}}}, code: fault.InvalidInput, msg: "unknown filter operator"},
		{file: "ragged.csv", code: fault.InvalidInput, msg: "data row 2 (line 3) has 2 fields but the header has 3"},
		{file: "bare-quote.csv", code: fault.InvalidInput, msg: "bad quoting at line 2, column 5"},
		{file: "unclosed-quote.csv", code: fault.InvalidInput, msg: "starting at line 2"},
		{file: "utf16.csv", code: fault.InvalidInput, msg: "UTF-16"},
		{file: "latin1.csv", code: fault.InvalidInput, msg: "data row 1, field 2 (line 2, column 3): byte 4 of the field is not valid UTF-8"},
		{file: "comma.csv", opts: Options{Dialect: Pipe}, dialect: Pipe, rows: [][]string{{"1,Ann,CA"}, {"2,Bob,NY"}, {"3,Cy,CA"}}, scanned: 3},
	}
	for _, c := range cases {
		t.Run(c.file+"/"+c.msg+string(c.opts.Dialect), func(t *testing.T) {
			res, err := Scan(bg, fixture(t, c.file), &c.opts)
			if fault.CodeOf(err) != c.code {
				t.Fatalf("err %v, want code %q", err, c.code)
			}
			if err != nil {
				if !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("message %q lacks %q", err, c.msg)
				}
				return
			}
			if res.Dialect != c.dialect || res.BOM != c.bom || res.Scanned != c.scanned || !reflect.DeepEqual(res.Rows, c.rows) {
				t.Fatalf("got %+v", res)
			}
			if res.Returned != int64(len(res.Rows)) || res.Matched != res.Returned || res.Truncated {
				t.Fatalf("counts %+v", res.Summary)
			}
		})
	}
}

func TestFilterOps(t *testing.T) {
	data := []byte("name,city\nAnn,Paris\nBob,Rome\nCy,Parma\nDee,paris\n")
	cases := []struct {
		filter []Condition
		want   []string
	}{
		{[]Condition{{Column: "city", Value: "Paris"}}, []string{"Ann"}},
		{[]Condition{{Column: "city", Op: Equals, Value: "paris"}}, []string{"Dee"}},
		{[]Condition{{Column: "city", Op: NotEquals, Value: "Rome"}}, []string{"Ann", "Cy", "Dee"}},
		{[]Condition{{Column: "city", Op: Contains, Value: "Par"}}, []string{"Ann", "Cy"}},
		{[]Condition{{Column: "city", Op: Contains, Value: "Par"}, {Column: "name", Op: NotEquals, Value: "Ann"}}, []string{"Cy"}},
		{[]Condition{{Column: "city", Value: "Paris "}}, nil},
	}
	for _, c := range cases {
		res, err := Scan(bg, data, &Options{Columns: []string{"name"}, Filter: c.filter})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range res.Rows {
			got = append(got, r[0])
		}
		if !reflect.DeepEqual(got, c.want) || res.Scanned != 4 || res.Matched != int64(len(c.want)) {
			t.Errorf("%v: got %v %+v", c.filter, got, res.Summary)
		}
	}
}

func TestParseCondition(t *testing.T) {
	cases := []struct {
		in   string
		want Condition
		bad  bool
	}{
		{in: "state=CA", want: Condition{Column: "state", Op: Equals, Value: "CA"}},
		{in: "state!=CA", want: Condition{Column: "state", Op: NotEquals, Value: "CA"}},
		{in: "note*=a=b", want: Condition{Column: "note", Op: Contains, Value: "a=b"}},
		{in: "empty=", want: Condition{Column: "empty", Op: Equals, Value: ""}},
		{in: "novalue", bad: true},
		{in: "=x", bad: true},
		{in: "!=x", bad: true},
	}
	for _, c := range cases {
		got, err := ParseCondition(c.in)
		if c.bad {
			if fault.CodeOf(err) != fault.InvalidInput {
				t.Errorf("%q: %v", c.in, err)
			}
			continue
		}
		if err != nil || got != c.want || got.String() != c.in {
			t.Errorf("%q: %+v %v", c.in, got, err)
		}
	}
}

// TestRowBudget: truncation is reported with where it happened, and the
// counts stay exact; offset pages through.
func TestRowBudget(t *testing.T) {
	data := []byte("n,even\n1,no\n2,yes\n3,no\n4,yes\n5,no\n6,yes\n")
	even := []Condition{{Column: "even", Value: "yes"}}
	cases := []struct {
		name      string
		opts      Options
		rows      []string
		truncated bool
		next      *Position
		skipped   int64
	}{
		{"budget equals matches", Options{Filter: even, MaxRows: 3}, []string{"2", "4", "6"}, false, nil, 0},
		{"budget one short", Options{Filter: even, MaxRows: 2}, []string{"2", "4"}, true, &Position{Row: 6, Line: 7, Offset: 2}, 0},
		{"budget of one", Options{Filter: even, MaxRows: 1}, []string{"2"}, true, &Position{Row: 4, Line: 5, Offset: 1}, 0},
		{"offset continues", Options{Filter: even, MaxRows: 1, Offset: 1}, []string{"4"}, true, &Position{Row: 6, Line: 7, Offset: 2}, 1},
		{"offset to the end", Options{Filter: even, MaxRows: 1, Offset: 2}, []string{"6"}, false, nil, 2},
		{"offset past the end", Options{Filter: even, Offset: 9}, nil, false, nil, 3},
		{"no filter", Options{MaxRows: 5}, []string{"1", "2", "3", "4", "5"}, true, &Position{Row: 6, Line: 7, Offset: 5}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Columns = []string{"n"}
			res, err := Scan(bg, data, &c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range res.Rows {
				got = append(got, r[0])
			}
			if !reflect.DeepEqual(got, c.rows) || res.Truncated != c.truncated || !reflect.DeepEqual(res.Next, c.next) || res.Skipped != c.skipped {
				t.Fatalf("got %v %+v next %+v", got, res.Summary, res.Next)
			}
			wantMatched := int64(3)
			if c.opts.Filter == nil {
				wantMatched = 6
			}
			if res.Scanned != 6 || res.Matched != wantMatched || res.Returned != int64(len(c.rows)) {
				t.Fatalf("counts %+v", res.Summary)
			}
		})
	}
}

func TestDetect(t *testing.T) {
	cases := []struct {
		in   string
		want Dialect
		bad  bool
	}{
		{in: "a,b\n1,2\n", want: Comma},
		{in: "a\tb\n1\t2\n", want: Tab},
		{in: "a|b\n1|2\n", want: Pipe},
		{in: "single\nx\n", want: Comma},
		{in: "a|b,c\n1|2,3\n", bad: true},
		{in: "a|b|c,d\n1|2|3,4\n", want: Pipe},
		{in: "a,b\n\"x|y\",2\n", want: Comma},
	}
	for _, c := range cases {
		got, err := detect([]byte(c.in), false)
		if c.bad {
			if fault.CodeOf(err) != fault.InvalidInput {
				t.Errorf("%q: %v %v", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %v %v", c.in, got, err)
		}
	}
}

func TestEmptyAndHeaderOnly(t *testing.T) {
	for _, in := range []string{"", "\n\n", "\xef\xbb\xbf"} {
		if _, err := Scan(bg, []byte(in), nil); fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("%q: %v", in, err)
		}
	}
	res, err := Scan(bg, []byte("a,b\n"), nil)
	if err != nil || res.Scanned != 0 || len(res.Rows) != 0 || !reflect.DeepEqual(res.Header, []string{"a", "b"}) {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestBadOptions(t *testing.T) {
	data := []byte("a\n1\n")
	for _, o := range []Options{{MaxRows: -1}, {Offset: -1}, {MaxScanRows: -1}, {Dialect: "semicolon"}, {Format: "rar"}} {
		if _, err := Scan(bg, data, &o); fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if _, err := Scan(bg, data, &Options{Columns: make([]string, 257)}); fault.CodeOf(err) != fault.Limit {
		t.Errorf("257 columns named: %v", err)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := Scan(ctx, data, nil); !errors.Is(err, fault.ErrUnavailable) {
		t.Errorf("canceled: %v", err)
	}
}
