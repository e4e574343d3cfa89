package script

import (
	"slices"
	"strconv"
	"strings"
)

// A label is the set of sources a value depends on, as indexes into the
// run's source table. Only sources that matter to a policy enter a label:
// an untrusted one, or one whose readers are restricted; a trusted, public
// source leaves values as plain as the script's literals. nil is the
// empty label.
//
// Labels are interned: one set is one *label, so a join is a map lookup
// after the first and a comparison is pointer equality.
type label struct {
	srcs []int32 // sorted, distinct
	id   int32   // the interning order, for the join cache's key
}

// labels interns labels and caches their joins.
type labels struct {
	bySet  map[string]*label
	joins  map[[2]int32]*label
	single []*label // by source id
	count  int32
}

func newLabels() *labels {
	return &labels{bySet: map[string]*label{}, joins: map[[2]int32]*label{}}
}

// of is the label holding source id alone.
func (ls *labels) of(id int32) *label {
	for int(id) >= len(ls.single) {
		ls.single = append(ls.single, nil)
	}
	if l := ls.single[id]; l != nil {
		return l
	}
	l := ls.intern([]int32{id})
	ls.single[id] = l
	return l
}

// ofSet is the label of the given source ids (any order, duplicates
// allowed); nil for none.
func (ls *labels) ofSet(ids []int32) *label {
	if len(ids) == 0 {
		return nil
	}
	s := slices.Clone(ids)
	slices.Sort(s)
	return ls.intern(slices.Compact(s))
}

func (ls *labels) intern(srcs []int32) *label {
	key := setKey(srcs)
	if l, ok := ls.bySet[key]; ok {
		return l
	}
	l := &label{srcs: srcs, id: ls.count}
	ls.count++
	ls.bySet[key] = l
	return l
}

func setKey(srcs []int32) string {
	var b strings.Builder
	for _, s := range srcs {
		b.WriteString(strconv.Itoa(int(s)))
		b.WriteByte(',')
	}
	return b.String()
}

// join is the union of a and b.
func (ls *labels) join(a, b *label) *label {
	switch {
	case a == nil || a == b:
		return b
	case b == nil:
		return a
	}
	if a.id > b.id {
		a, b = b, a
	}
	key := [2]int32{a.id, b.id}
	if l, ok := ls.joins[key]; ok {
		return l
	}
	l := ls.intern(union(a.srcs, b.srcs))
	ls.joins[key] = l
	return l
}

// union merges two sorted sets.
func union(a, b []int32) []int32 {
	out := make([]int32, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// sources are l's source ids (nil for the empty label).
func (l *label) sources() []int32 {
	if l == nil {
		return nil
	}
	return l.srcs
}
