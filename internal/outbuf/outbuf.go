// Package outbuf is a byte buffer with a hard capacity: a write that would
// pass it fails instead of growing the buffer, so a renderer can stop as soon
// as its output is known not to fit an output bound, without building the
// oversize result first. ToolText applies it to a tool result: text plus
// structured content within the call's output bound.
package outbuf

import (
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
)

// ErrFull is returned by a write that would pass the buffer's capacity.
var ErrFull = fault.NewMark("output exceeds the bound")

// Buffer collects at most Max bytes. The zero value holds nothing: set Max.
// After a failed write the buffer keeps what fit and refuses further writes.
type Buffer struct {
	Max  int64
	buf  []byte
	full bool
}

// Write appends p, or fails with ErrFull when it would pass Max.
func (b *Buffer) Write(p []byte) (int, error) {
	if b.full || int64(len(b.buf))+int64(len(p)) > b.Max {
		b.full = true
		return 0, ErrFull
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// WriteString appends s, or fails with ErrFull when it would pass Max.
func (b *Buffer) WriteString(s string) (int, error) {
	if b.full || int64(len(b.buf))+int64(len(s)) > b.Max {
		b.full = true
		return 0, ErrFull
	}
	b.buf = append(b.buf, s...)
	return len(s), nil
}

// WriteByte appends c, or fails with ErrFull when it would pass Max.
func (b *Buffer) WriteByte(c byte) error {
	_, err := b.Write([]byte{c})
	return err
}

// WriteRune appends r, or fails with ErrFull when it would pass Max.
func (b *Buffer) WriteRune(r rune) (int, error) {
	var tmp [utf8.UTFMax]byte
	return b.Write(utf8.AppendRune(tmp[:0], r))
}

// Full reports whether a write was refused.
func (b *Buffer) Full() bool { return b.full }

// Len is the number of bytes held.
func (b *Buffer) Len() int { return len(b.buf) }

// String returns the bytes held.
func (b *Buffer) String() string { return string(b.buf) }
