package tabular

import (
	"strconv"
	"strings"

	"github.com/capkit/capkit/internal/clip"

	"github.com/capkit/capkit/fault"
)

// Op compares a field with a condition's value. Comparisons are exact,
// case-sensitive string comparisons: no trimming, no numbers.
type Op string

// The operators.
const (
	// Equals holds when the field is exactly the value (the default).
	Equals Op = "eq"
	// NotEquals holds when the field differs from the value.
	NotEquals Op = "ne"
	// Contains holds when the value occurs in the field.
	Contains Op = "contains"
)

// Condition is one test of a named column. A filter is a list of
// conditions that must all hold.
type Condition struct {
	Column string `json:"column" jsonschema:"header name of the column to test"`
	Op     Op     `json:"op,omitempty" jsonschema:"eq (default), ne or contains; exact case-sensitive string comparison"`
	Value  string `json:"value" jsonschema:"the string to compare with"`
}

// ParseCondition parses the command-line form: "column=value",
// "column!=value" or "column*=value" (contains). The first operator in
// the text splits it, so a value may contain '='; a column name may not.
func ParseCondition(s string) (Condition, error) {
	i := strings.IndexByte(s, '=')
	if i <= 0 {
		return Condition{}, fault.New(fault.InvalidInput, "filter %q: write column=value, column!=value or column*=value", clip.Text(s))
	}
	c := Condition{Column: s[:i], Op: Equals, Value: s[i+1:]}
	switch s[i-1] {
	case '!':
		c.Column, c.Op = s[:i-1], NotEquals
	case '*':
		c.Column, c.Op = s[:i-1], Contains
	}
	if c.Column == "" {
		return Condition{}, fault.New(fault.InvalidInput, "filter %q: the column name is empty", clip.Text(s))
	}
	return c, nil
}

// String is the command-line form.
func (c Condition) String() string {
	switch c.Op {
	case NotEquals:
		return c.Column + "!=" + c.Value
	case Contains:
		return c.Column + "*=" + c.Value
	}
	return c.Column + "=" + c.Value
}

// test is a condition bound to a field index.
type test struct {
	i  int
	op Op
	v  string
}

func (t test) holds(rec []string) bool {
	f := rec[t.i]
	switch t.op {
	case NotEquals:
		return f != t.v
	case Contains:
		return strings.Contains(f, t.v)
	}
	return f == t.v
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
