package textjson

import (
	"bytes"
	"unicode/utf8"
)

// position returns the 1-based line and column of byte offset off in data.
// Lines end at '\n' (so "\r\n" is one line break); columns count characters
// from the start of the line, an invalid byte counting as one.
func position(data []byte, off int64) (line, col int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	prefix := data[:off]
	line = 1 + bytes.Count(prefix, []byte{'\n'})
	start := bytes.LastIndexByte(prefix, '\n') + 1
	return line, 1 + utf8.RuneCount(prefix[start:])
}

// firstInvalidUTF8 returns the offset of the first byte of data that does
// not begin a valid UTF-8 encoding, or -1 when data is valid UTF-8.
func firstInvalidUTF8(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		if data[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}
