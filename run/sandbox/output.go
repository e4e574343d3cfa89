package sandbox

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// headTail keeps the first and the last bytes written to it, max in all,
// and counts the rest. Memory is bounded by max whatever is written.
type headTail struct {
	max   int
	head  []byte
	tail  []byte // a ring of up to max-max/2 bytes once the head is full
	next  int    // where the ring's next byte goes
	total int64
}

func newHeadTail(max int) *headTail {
	return &headTail{max: max, head: make([]byte, 0, min(max/2, 4096))}
}

func (h *headTail) Write(p []byte) (int, error) {
	n := len(p)
	h.total += int64(n)
	if room := h.max/2 - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	size := h.max - h.max/2
	for len(p) > 0 {
		if len(h.tail) < size {
			k := min(size-len(h.tail), len(p))
			h.tail = append(h.tail, p[:k]...)
			p = p[k:]
			continue
		}
		// A write longer than the ring leaves only its last size bytes.
		if len(p) > size {
			p = p[len(p)-size:]
		}
		k := copy(h.tail[h.next:], p)
		copy(h.tail, p[k:])
		h.next = (h.next + len(p)) % size
		p = nil
	}
	return n, nil
}

// output renders what was kept: everything when it all fit, else the head
// and the tail, each cut to whole UTF-8 characters, around a marker with
// the exact number of bytes left out. Bytes that are not UTF-8 are shown
// as U+FFFD (the counts are of the bytes written).
func (h *headTail) output() Output {
	ring := append(append([]byte{}, h.tail[h.next:]...), h.tail[:h.next]...)
	if int64(len(h.head)+len(ring)) == h.total {
		return Output{Text: strings.ToValidUTF8(string(h.head)+string(ring), "\uFFFD"), Bytes: h.total}
	}
	head := h.head
	for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
		if utf8.RuneStart(head[i]) {
			if !utf8.FullRune(head[i:]) {
				head = head[:i]
			}
			break
		}
	}
	// A character has at most UTFMax-1 continuation bytes: a tail that
	// starts inside one loses them, even when they are all it has.
	tail := ring
	for k := 0; k < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); k++ {
		tail = tail[1:]
	}
	omitted := h.total - int64(len(head)+len(tail))
	return Output{
		Text:    strings.ToValidUTF8(fmt.Sprintf("%s\n[... %d bytes omitted ...]\n%s", head, omitted, tail), "\uFFFD"),
		Bytes:   h.total,
		Omitted: omitted,
	}
}
