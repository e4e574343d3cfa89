package passages

import (
	"context"
	"unicode/utf8"
)

// borderless reports whether no proper prefix of q is also a suffix of
// it: then two occurrences of q never overlap, every occurrence is a
// match, and the halves of a source can be searched independently.
func borderless(q string) bool {
	for k := 1; k < len(q); k++ {
		if q[:k] == q[len(q)-k:] {
			return false
		}
	}
	return true
}

// halves searches the two halves of sp on two goroutines: a match belongs
// to the half it starts in. Only the first s.limit matches of each half
// are kept, then merged in order.
func (s *search) halves(ctx context.Context, m *exactMatcher, sp span) error {
	n := len(m.q)
	mid := sp.start + (sp.end-sp.start)/2
	for mid < sp.end && !utf8.RuneStart(s.src[mid]) {
		mid++
	}
	type half struct {
		at    []int
		total int64
		err   error
	}
	scan := func(h *half, from, to int) {
		h.err = guard(func() error {
			return m.each(ctx, s.src[from:min(sp.end, to+n-1)], func(at, _ int) bool {
				if from+at < to {
					h.total++
					if len(h.at) < s.limit {
						h.at = append(h.at, from+at)
					}
				}
				return true
			})
		})
	}
	var first, second half
	done := make(chan struct{})
	go func() {
		scan(&second, mid, sp.end)
		close(done)
	}()
	scan(&first, sp.start, mid)
	<-done
	if first.err != nil {
		return first.err
	}
	if second.err != nil {
		return second.err
	}
	s.res.Total = first.total + second.total
	for _, at := range append(first.at, second.at...) {
		if len(s.res.Matches) == s.limit {
			break
		}
		s.add(sp, at, at+n)
	}
	return nil
}
