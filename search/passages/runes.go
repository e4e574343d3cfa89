package passages

import (
	"encoding/binary"
	"math/bits"
)

// countRunes counts the code points of valid UTF-8: the bytes that are
// not continuation bytes (10xxxxxx), eight at a time.
func countRunes(b []byte) int64 {
	const high = 0x8080808080808080
	var cont int
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		// A continuation byte has bit 7 set and bit 6 clear; w<<1 moves
		// each byte's bit 6 to its bit 7.
		cont += bits.OnesCount64(w &^ (w << 1) & high)
	}
	for ; i < len(b); i++ {
		if b[i]&0xC0 == 0x80 {
			cont++
		}
	}
	return int64(len(b) - cont)
}

// skipRunes returns the byte offset n code points after off in valid
// UTF-8, or len(b) and the number of code points short if b ends first.
func skipRunes(b []byte, off int, n int64) (int, int64) {
	// Whole words while they cannot overshoot: a word holds at most eight
	// code points.
	for n >= 8 && off+8 <= len(b) {
		c := countRunes(b[off : off+8])
		n -= c
		off += 8
	}
	// off may now sit inside a character; step to its end first.
	for off < len(b) && b[off]&0xC0 == 0x80 {
		off++
	}
	for ; n > 0 && off < len(b); n-- {
		off++
		for off < len(b) && b[off]&0xC0 == 0x80 {
			off++
		}
	}
	return off, n
}
