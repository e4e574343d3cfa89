package outbuf

import (
	"errors"
	"testing"
)

func TestBufferBound(t *testing.T) {
	cases := []struct {
		name   string
		max    int64
		writes []string
		want   string
		full   bool
	}{
		{"empty", 0, nil, "", false},
		{"zero max refuses", 0, []string{"a"}, "", true},
		{"exactly at max", 3, []string{"ab", "c"}, "abc", false},
		{"one past max", 3, []string{"ab", "cd"}, "ab", true},
		{"refuses after full", 3, []string{"abcd", "a"}, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &Buffer{Max: c.max}
			var err error
			for _, w := range c.writes {
				if _, werr := b.WriteString(w); werr != nil {
					err = werr
				}
			}
			if b.String() != c.want || b.Full() != c.full || (err != nil) != c.full {
				t.Fatalf("got %q full=%v err=%v", b.String(), b.Full(), err)
			}
			if c.full && !errors.Is(err, ErrFull) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestWriteRuneAndByte(t *testing.T) {
	b := &Buffer{Max: 3}
	if _, err := b.WriteRune('é'); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteByte('x'); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WriteRune('é'); !errors.Is(err, ErrFull) || b.Len() != 3 {
		t.Fatalf("err %v len %d", err, b.Len())
	}
}
