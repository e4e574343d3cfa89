package passages

import (
	"context"
	"encoding/binary"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
)

// validUTF8 fails if source is not UTF-8, naming the first bad byte.
func validUTF8(ctx context.Context, src []byte) error {
	for off := 0; off < len(src); {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := min(off+checkEvery, len(src))
		bad, next := firstInvalid(src, off, end)
		if bad >= 0 {
			return fault.New(fault.InvalidInput, "the source is not valid UTF-8 (first bad byte at offset %d): passages are counted in characters", bad)
		}
		off = next
	}
	return nil
}

// firstInvalid checks the characters of src that start in [off, end),
// sixteen ASCII bytes at a time, and returns the offset of the first bad
// byte (or -1) and where the next character starts.
func firstInvalid(src []byte, off, end int) (bad, next int) {
	const high = 0x8080808080808080
	i := off
	for i < end {
		for i+16 <= end && (binary.LittleEndian.Uint64(src[i:])|binary.LittleEndian.Uint64(src[i+8:]))&high == 0 {
			i += 16
		}
		if i >= end {
			break
		}
		if src[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size == 1 {
			return i, i
		}
		i += size
	}
	return -1, i
}
