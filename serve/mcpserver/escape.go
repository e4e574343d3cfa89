package mcpserver

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf8"
)

// appendEscaped appends s to dst as the inside of a JSON string: what
// jsontext.AppendQuote writes between its quotes (the shortest form of RFC
// 8785: '"', '\\' and control characters escaped, \b \f \n \r \t by name,
// every invalid UTF-8 byte replaced by U+FFFD), which FuzzAppendEscaped
// checks.
//
// Written by hand for speed: escaping a 4 MiB file was the largest cost of
// serving it. Where jsontext examines one byte at a time and copies each
// run between escapes, this moves 32 bytes at a time where the CPU allows
// (escapeASCII, AVX2) and eight bytes at a time otherwise (SWAR): it
// stores each block as it is, then stops at the first byte in it that
// needs attention, if any. The Go modules that escape with SIMD do it
// inside whole encoders (bytedance/sonic, with its JIT); this needs only
// the one kernel, whose output must be jsontext's byte for byte.
func appendEscaped(dst []byte, s string) []byte {
	return appendEscapedWith(dst, s, haveSIMD)
}

// simdRoom is the room in dst escapeASCII needs, and simdMin the bytes of
// s.
const (
	simdRoom = 256
	simdMin  = 64
)

// appendEscapedWith is appendEscaped, with escapeASCII (simd) or without.
func appendEscapedWith(dst []byte, s string, simd bool) []byte {
	n := len(dst)
	dst = slices.Grow(dst, len(s)+len(s)/8+16) // typical text: an escape every few dozen bytes
	dst = dst[:cap(dst)]
	i := 0
	for i < len(s) {
		stop := len(s)
		if simd && len(s)-i >= simdMin {
			if len(dst)-n < simdRoom {
				dst = slices.Grow(dst[:n], simdRoom+len(s)-i)
				dst = dst[:cap(dst)]
			}
			di, dn := escapeASCII(dst[n:], s[i:])
			i, n = i+di, n+dn
			// What escapeASCII leaves (a byte of 0x80 or more, the last
			// bytes, a full dst) goes eight bytes at a time for a while.
			stop = min(len(s), i+simdMin)
		}
		for i < stop {
			if len(dst)-n < 16 { // room for a word and the longest escape
				dst = slices.Grow(dst[:n], 16+len(s)-i)
				dst = dst[:cap(dst)]
			}
			var c byte
			if i+8 <= len(s) {
				b := s[i : i+8]
				w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
					uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
				binary.LittleEndian.PutUint64(dst[n:n+8], w)
				m := attention(w)
				if m == 0 {
					i, n = i+8, n+8
					continue
				}
				k := bits.TrailingZeros64(m) >> 3
				i, n = i+k, n+k
				c = byte(w >> (k * 8))
			} else {
				c = s[i]
			}
			switch {
			case c < 0x20 || c == '"' || c == '\\':
				if e := shortEscape[c]; e != 0 {
					dst[n], dst[n+1] = '\\', e
					n += 2
				} else {
					dst[n], dst[n+1], dst[n+2], dst[n+3], dst[n+4], dst[n+5] = '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf]
					n += 6
				}
				i++
			case c < utf8.RuneSelf:
				dst[n] = c
				i, n = i+1, n+1
			default:
				r, size := utf8.DecodeRuneInString(s[i:])
				if r == utf8.RuneError && size == 1 {
					n += copy(dst[n:], "\ufffd")
				} else {
					n += copy(dst[n:], s[i:i+size])
				}
				i += size
			}
		}
	}
	return dst[:n]
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// attention has the high bit set in the lowest byte of w that is a control
// character, '"', '\\' or not ASCII, if any. Bytes above that one may be
// marked too (borrows of the subtractions propagate upward only): only the
// lowest mark is used.
func attention(w uint64) uint64 {
	return ((w - lsb*0x20) | ((w ^ lsb*'"') - lsb) | ((w ^ lsb*'\\') - lsb) | w) & msb
}

const hexDigits = "0123456789abcdef"

// shortEscape is the letter of the two-character escape of a byte, or 0
// for bytes escaped as \u00XX.
var shortEscape = [256]byte{'"': '"', '\\': '\\', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

// asciiEscapes is escapeASCII's table: for each ASCII byte, its escape
// (the bytes in order from the lowest) and, in the top byte, the escape's
// length; 0 for bytes that need none.
var asciiEscapes = func() (t [0x80]uint64) {
	for c := range byte(0x80) {
		var e []byte
		switch {
		case shortEscape[c] != 0:
			e = []byte{'\\', shortEscape[c]}
		case c < 0x20:
			e = []byte{'\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf]}
		default:
			continue
		}
		var w [8]byte
		copy(w[:], e)
		w[7] = byte(len(e))
		t[c] = binary.LittleEndian.Uint64(w[:])
	}
	return t
}()
