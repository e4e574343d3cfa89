package lexindex

import (
	"database/sql"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func TestCheckFTS(t *testing.T) {
	cases := []struct {
		q   string
		err string // "" for a valid query, else a part of the message
	}{
		{"a", ""},
		{"a b c", ""},
		{"a AND b OR c NOT d", ""},
		{"(a OR b) AND c", ""},
		{"a OR (b)", ""},
		{`"quoted ""phrase"""*`, ""},
		{"a + b + c*", ""},
		{"^a", ""},
		{"a^b", ""},
		{"NEAR(a b)", ""},
		{"NEAR (a b c, 12)", ""},
		{"NEAR(a)", ""},
		{"body:a", ""},
		{"BODY : a", ""},
		{`"body":a`, ""},
		{"-body:a", ""},
		{"{body}:a", ""},
		{"-{body body}:(a OR b)", ""},
		{"body:NEAR(a b)", ""},
		{"body:^a", ""},
		{"é日本", ""},
		{"\x1a", ""},
		{"a\tb\nc\rd", ""},
		{"a (b)", `"a" before "(" is not NEAR at character 1`},
		{"(a) b", `unexpected "b" at character 5`},
		{"(a)(b)", `unexpected "(" at character 4`},
		{"a AND", "ends too early at character 6"},
		{"NOT a", `unexpected "NOT" at character 1`},
		{"a OR OR b", `unexpected "OR" at character 6`},
		{"()", `unexpected ")" at character 2`},
		{"a.b", `unexpected '.' (quote it, or leave it out) at character 2`},
		{"é.b", `unexpected '.' (quote it, or leave it out) at character 2`},
		{`a "unterminated`, "unterminated string at character 3"},
		{"a\fb", `unexpected '\f'`},
		{"near(a b)", `"near" before "(" is not NEAR at character 1`},
		{`"NEAR"(a b)`, `is not NEAR at character 1`},
		{"NEAR(a b, x)", `NEAR distance "x" is not a number`},
		{"NEAR(a b,)", `unexpected ")" at character 10`},
		{"NEAR(^a b)", `unexpected "^" at character 6`},
		{"title:a", `no column "title" (the indexed column is "body") at character 1`},
		{"{body title}:a", `no column "title"`},
		{"{}:a", `unexpected "}" at character 2`},
		{"-a", `no column "a" (the indexed column is "body") at character 2`},
		{"a+", "ends too early"},
		{"+a", `unexpected "+" at character 1`},
		{"*", "cannot start with *"},
		{"a\x00b", "NUL character at character 2"},
		{"", "empty"},
		{" \t", "empty"},
		{"a:b:c", `no column "a"`},
		{"body:a:b", `unexpected ":" at character 7`},
		{strings.Repeat("(", limits.LexMaxQueryDepth+1) + "a" + strings.Repeat(")", limits.LexMaxQueryDepth+1), "nest deeper than 16 levels at character 17"},
		{strings.Repeat("(", limits.LexMaxQueryDepth) + "a" + strings.Repeat(")", limits.LexMaxQueryDepth), ""},
		{strings.Repeat("a NOT ", maxQueryHeight-1) + "a", ""},
		{strings.Repeat("a NOT ", maxQueryHeight) + "a", "too deep"},
	}
	for _, c := range cases {
		err := checkFTS(c.q)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.q, err)
		case c.err != "" && (fault.CodeOf(err) != fault.InvalidInput || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: %v, want %q", c.q, err, c.err)
		}
		if c.err == "" || stricter(c.q, err) {
			continue
		}
		// Every refusal above is SQLite's too.
		if serr := sqliteAccepts(t, c.q); serr == nil {
			t.Errorf("%q: refused here, accepted by SQLite", c.q)
		}
	}
	if err := checkFTS(strings.Repeat("a", limits.LexMaxQueryBytes+1)); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("a query past its bound: %v", err)
	}
}

var probe struct {
	once sync.Once
	db   *sql.DB
	err  error
}

// sqliteAccepts runs q against an empty FTS5 table shaped like the
// index's and returns SQLite's error.
func sqliteAccepts(t testing.TB, q string) error {
	probe.once.Do(func() {
		probe.db, probe.err = sql.Open("sqlite", ":memory:")
		if probe.err == nil {
			probe.db.SetMaxOpenConns(1)
			_, probe.err = probe.db.Exec(`CREATE VIRTUAL TABLE fts USING fts5(body)`)
		}
	})
	if probe.err != nil {
		t.Fatal(probe.err)
	}
	rows, err := probe.db.Query(`SELECT rowid FROM fts WHERE fts MATCH ?1`, q)
	if err == nil {
		err = rows.Close()
	}
	return err
}

// FuzzCheckFTS holds the checker to SQLite's FTS5 parser: what one
// accepts the other must accept, except the nesting bounds the checker
// adds.
func FuzzCheckFTS(f *testing.F) {
	for _, s := range []string{
		"a", "a AND b", "(a OR b) NOT c", `"x ""y"""*`, "a + b*", "^a", "NEAR(a b, 3)",
		"-{body}:(a)", "body:^a", "a (b)", "a.b", `"open`, "{}:a", "a^b", "NEAR(a b,)", "é",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		// A hang guard that names the input and shows every goroutine.
		guard := time.AfterFunc(20*time.Second, func() {
			buf := make([]byte, 1<<20)
			panic(fmt.Sprintf("hung on %q:\n%s", q, buf[:runtime.Stack(buf, true)]))
		})
		defer guard.Stop()
		mine := checkFTS(q)
		theirs := sqliteAccepts(t, q)
		if mine == nil && theirs != nil {
			t.Fatalf("%q: accepted here, refused by SQLite: %v", q, theirs)
		}
		if mine != nil && theirs == nil && !stricter(q, mine) {
			t.Fatalf("%q: refused here (%v), accepted by SQLite", q, mine)
		}
	})
}

// stricter reports the refusals the checker makes on purpose.
func stricter(q string, err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "nest deeper") || strings.Contains(msg, "too deep") ||
		strings.Contains(msg, "NEAR distance") || strings.Contains(msg, "NUL") ||
		strings.Contains(msg, "not valid UTF-8") || fault.CodeOf(err) == fault.Limit ||
		strings.HasPrefix(q, "*")
}
