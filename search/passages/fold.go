package passages

import (
	"context"
	"unicode"
	"unicode/utf8"
)

// foldMatcher finds matches under simple case folding with
// Knuth-Morris-Pratt over folded code points: linear in the text whatever
// the query, so no query makes a search quadratic.
type foldMatcher struct {
	pat  []rune
	fail []int
}

func newFoldMatcher(query string) *foldMatcher {
	pat := make([]rune, 0, utf8.RuneCountInString(query))
	for _, r := range query {
		pat = append(pat, fold(r))
	}
	fail := make([]int, len(pat))
	for i, k := 1, 0; i < len(pat); i++ {
		for k > 0 && pat[i] != pat[k] {
			k = fail[k-1]
		}
		if pat[i] == pat[k] {
			k++
		}
		fail[i] = k
	}
	return &foldMatcher{pat: pat, fail: fail}
}

// fold maps r to the least member of its simple case folding orbit, so
// two characters fold to the same value exactly when they are equal under
// simple case folding.
func fold(r rune) rune {
	if r < utf8.RuneSelf {
		// The least member of an ASCII letter's orbit is its capital
		// (also for k and s, whose orbits hold U+212A and U+017F).
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

func (m *foldMatcher) each(ctx context.Context, b []byte, fn func(at, n int) bool) error {
	// starts holds the byte offsets of the last len(pat) characters read,
	// as a ring, to recover where a completed match began.
	np := len(m.pat)
	starts := make([]int, np)
	k, seen := 0, 0
	for i := 0; i < len(b); seen++ {
		if i&(checkEvery-1) < utf8.UTFMax {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		r, size := rune(b[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		starts[seen%np] = i
		i += size
		f := fold(r)
		for k > 0 && f != m.pat[k] {
			k = m.fail[k-1]
		}
		if f == m.pat[k] {
			k++
		}
		if k == np {
			at := starts[(seen+1)%np]
			if !fn(at, i-at) {
				return nil
			}
			k = 0
		}
	}
	return nil
}
