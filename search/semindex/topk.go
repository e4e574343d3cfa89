package semindex

import (
	"container/heap"
	"sort"
)

// scored is one chunk's score.
type scored struct {
	id    int64
	score float64
}

// better ranks a before b: higher score, then lower chunk id (index order).
func better(a, b scored) bool {
	return a.score > b.score || a.score == b.score && a.id < b.id
}

// topK keeps the best k offers; its heap has the worst kept one on top.
type topK struct {
	k    int
	kept []scored
}

func (t *topK) Len() int           { return len(t.kept) }
func (t *topK) Less(i, j int) bool { return better(t.kept[j], t.kept[i]) }
func (t *topK) Swap(i, j int)      { t.kept[i], t.kept[j] = t.kept[j], t.kept[i] }
func (t *topK) Push(x any)         { t.kept = append(t.kept, x.(scored)) }
func (t *topK) Pop() any {
	x := t.kept[len(t.kept)-1]
	t.kept = t.kept[:len(t.kept)-1]
	return x
}

func (t *topK) offer(id int64, score float64) {
	s := scored{id, score}
	switch {
	case len(t.kept) < t.k:
		heap.Push(t, s)
	case t.k > 0 && better(s, t.kept[0]):
		t.kept[0] = s
		heap.Fix(t, 0)
	}
}

// best returns the kept offers best first.
func (t *topK) best() []scored {
	out := append([]scored(nil), t.kept...)
	sort.Slice(out, func(i, j int) bool { return better(out[i], out[j]) })
	return out
}
