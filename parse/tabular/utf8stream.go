package tabular

import "unicode/utf8"

// utf8Stream checks a byte stream, chunk by chunk as it flows, for valid
// UTF-8, and records the stream offset of the first invalid byte. Checking
// the stream once is cheaper than checking each field the CSV reader
// returns; the scan locates the field only when this reports a problem.
type utf8Stream struct {
	carry [utf8.UTFMax]byte // an incomplete rune from the end of the last chunk
	nc    int
	off   int64 // stream offset of the byte after the last chunk
	bad   int64 // offset of the first invalid byte, or -1
}

func newUTF8Stream() *utf8Stream { return &utf8Stream{bad: -1} }

// write checks the next chunk of the stream.
func (u *utf8Stream) write(p []byte) {
	if u.bad >= 0 || len(p) == 0 {
		return
	}
	base := u.off // offset of p[0]
	u.off += int64(len(p))
	if u.nc > 0 {
		// Complete the carried rune with the first bytes of p.
		var buf [2 * utf8.UTFMax]byte
		n := copy(buf[:], u.carry[:u.nc])
		m := copy(buf[n:], p[:min(len(p), utf8.UTFMax-1)])
		if !utf8.FullRune(buf[:n+m]) { // p is shorter than the rest of the rune
			u.nc = copy(u.carry[:], buf[:n+m])
			return
		}
		r, size := utf8.DecodeRune(buf[:n+m])
		if r == utf8.RuneError && size == 1 {
			u.bad = base - int64(n)
			return
		}
		p, base = p[size-n:], base+int64(size-n)
		u.nc = 0
	}
	k := incompleteTail(p)
	if !utf8.Valid(p[:k]) {
		u.bad = base + int64(firstInvalid(p[:k]))
		return
	}
	u.nc = copy(u.carry[:], p[k:])
}

// end marks the end of the stream: a rune still incomplete is invalid.
func (u *utf8Stream) end() {
	if u.bad < 0 && u.nc > 0 {
		u.bad = u.off - int64(u.nc)
	}
}

// incompleteTail returns where an incomplete rune at the end of p starts,
// or len(p).
func incompleteTail(p []byte) int {
	for j := len(p) - 1; j >= 0 && j >= len(p)-(utf8.UTFMax-1); j-- {
		if utf8.RuneStart(p[j]) {
			if !utf8.FullRune(p[j:]) {
				return j
			}
			break
		}
	}
	return len(p)
}

// firstInvalid returns the index of the first byte of p that does not
// begin a valid encoding, or len(p).
func firstInvalid(p []byte) int {
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(p)
}
