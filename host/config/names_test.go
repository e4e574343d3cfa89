package config

import (
	"regexp"
	"strings"
	"testing"
)

var patterns = []namePattern{toolNamePattern, actorNamePattern, resourcePattern, envNamePattern}

// Each pattern matches exactly what its regular expression does.
func FuzzNamePatterns(f *testing.F) {
	for _, s := range []string{"", "a", "read_file", "Z", "_x", "9", "a-b", "a.b:c", "a b", "é", "a\x00",
		"a" + strings.Repeat("b", 63), "a" + strings.Repeat("b", 64), "A" + strings.Repeat("9", 127), "A" + strings.Repeat("9", 128)} {
		f.Add(s)
	}
	res := make([]*regexp.Regexp, len(patterns))
	for i, p := range patterns {
		res[i] = regexp.MustCompile(p.expr)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, p := range patterns {
			if got, want := p.MatchString(s), res[i].MatchString(s); got != want {
				t.Errorf("%s on %q: %v, the regexp says %v", p, s, got, want)
			}
		}
	})
}

// The length bound at its edge: at the maximum and one past.
func TestNamePatternLengths(t *testing.T) {
	for _, p := range patterns {
		at := p.first[:1] + strings.Repeat(p.rest[:1], p.max)
		if !p.MatchString(at) || p.MatchString(at+p.rest[:1]) {
			t.Errorf("%s: %d bytes %v, %d bytes %v", p, len(at), p.MatchString(at), len(at)+1, p.MatchString(at+p.rest[:1]))
		}
	}
}
