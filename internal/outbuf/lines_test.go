package outbuf

import (
	"errors"
	"testing"
)

func TestLines(t *testing.T) {
	b := &Buffer{Max: 12}
	l := NewLines(b)
	l.Line("ab", "c")
	l.Line()
	if l.Err() != nil || l.Written() != 5 || b.String() != "abc\n\n" {
		t.Fatalf("%q %d %v", b.String(), l.Written(), l.Err())
	}
	l.Line("0123456789") // passes the bound: nothing more is written
	l.Line("x")
	if !errors.Is(l.Err(), ErrFull) || l.Written() != 5 || b.String() != "abc\n\n" {
		t.Fatalf("%q %d %v", b.String(), l.Written(), l.Err())
	}
}
