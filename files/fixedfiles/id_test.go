package fixedfiles

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
)

var idRegexp = regexp.MustCompile(IDPattern)

func TestValidID(t *testing.T) {
	cases := []struct {
		id string
		ok bool
	}{
		{"release.notes", true},
		{"a", true},
		{"0", true},
		{"-x", true},
		{"_", true},
		{"a..b", true},
		{"x.", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"", false},
		{".", false},
		{"..", false},
		{".hidden", false},
		{"../etc/passwd", false},
		{"a/b", false},
		{"A", false},
		{"notes\x00", false},
		{"é", false},
		{"a b", false},
		{"a\n", false},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			if got := ValidID(c.id); got != c.ok {
				t.Fatalf("ValidID(%q) = %v, want %v", c.id, got, c.ok)
			}
			if got := idRegexp.MatchString(c.id); got != c.ok {
				t.Fatalf("pattern disagrees on %q", c.id)
			}
			err := checkID(c.id)
			if c.ok != (err == nil) {
				t.Fatalf("checkID(%q) = %v", c.id, err)
			}
			if err != nil && (fault.CodeOf(err) != fault.InvalidInput || !errors.Is(err, ErrInvalidID)) {
				t.Fatalf("checkID(%q) = %v, want invalid_input wrapping ErrInvalidID", c.id, err)
			}
		})
	}
}

// FuzzValidID holds the hand-written validator to the documented pattern.
func FuzzValidID(f *testing.F) {
	for _, s := range []string{"release.notes", "", ".", "..", "a/b", "A", strings.Repeat("z", 128), strings.Repeat("z", 129), "a\x00", "\xff", "-", "a-b_c.d", "a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := ValidID(id), idRegexp.MatchString(id); got != want {
			t.Fatalf("ValidID(%q) = %v, pattern says %v", id, got, want)
		}
	})
}
