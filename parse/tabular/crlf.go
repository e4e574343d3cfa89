package tabular

import (
	"bytes"
	"io"
)

// quotedCRLF keeps the CR of a "\r\n" inside a quoted field, which
// encoding/csv otherwise drops: its reader turns every line's trailing
// "\r\n" into "\n", inside quotes too, silently changing the cell. Inside a
// quoted field this reader writes "\r\r\n", which encoding/csv reads back as
// "\r\n". Whether a byte is inside quotes is the parity of the quotes seen
// so far: exact for input encoding/csv accepts (a quote elsewhere is a
// bare-quote error either way).
//
// It counts what it inserts, so that encoding/csv's offsets can be mapped
// back to the input's (Source).
type quotedCRLF struct {
	r        io.Reader
	in       bool   // inside a quoted field
	cr       bool   // a CR inside quotes held back: is a LF next?
	pending  []byte // output not yet returned
	produced int64  // output bytes made so far
	inserted []int64
	done     int64 // insertions at or before the last Source offset
	scratch  [16 << 10]byte
	out      []byte
}

func newQuotedCRLF(r io.Reader) *quotedCRLF { return &quotedCRLF{r: r} }

func (q *quotedCRLF) Read(p []byte) (int, error) {
	for len(q.pending) == 0 {
		n, err := q.r.Read(q.scratch[:])
		q.expand(q.scratch[:n], err != nil)
		if len(q.pending) == 0 && err != nil {
			return 0, err
		}
		if err != nil && err != io.EOF {
			return 0, err
		}
	}
	n := copy(p, q.pending)
	q.pending = q.pending[n:]
	return n, nil
}

// expand turns src into output; last says no input follows.
func (q *quotedCRLF) expand(src []byte, last bool) {
	q.out = q.out[:0]
	if q.cr && (len(src) > 0 || last) {
		q.cr = false
		if len(src) > 0 && src[0] == '\n' {
			q.emitInserted()
		}
		q.out = append(q.out, '\r')
	}
	for len(src) > 0 {
		quote := bytes.IndexByte(src, '"')
		if !q.in {
			if quote < 0 {
				q.out = append(q.out, src...)
				break
			}
			q.out, src, q.in = append(q.out, src[:quote+1]...), src[quote+1:], true
			continue
		}
		field := src
		if quote >= 0 {
			field = src[:quote]
		}
		cr := bytes.IndexByte(field, '\r')
		if cr < 0 {
			q.out = append(q.out, field...)
			if quote < 0 {
				break
			}
			q.out, src, q.in = append(q.out, '"'), src[quote+1:], false
			continue
		}
		q.out = append(q.out, src[:cr]...)
		switch {
		case cr+1 == len(src) && !last:
			q.cr = true // decided by the next read
			src = nil
			continue
		case cr+1 < len(src) && src[cr+1] == '\n':
			q.emitInserted()
		}
		q.out, src = append(q.out, '\r'), src[cr+1:]
	}
	if q.cr && last {
		q.cr = false
		q.out = append(q.out, '\r')
	}
	q.produced += int64(len(q.out))
	q.pending = q.out
}

// emitInserted writes the CR that encoding/csv will take away.
func (q *quotedCRLF) emitInserted() {
	q.inserted = append(q.inserted, q.produced+int64(len(q.out)))
	q.out = append(q.out, '\r')
}

// Source maps an offset in what Read returned to one in the input. Offsets
// must not decrease from call to call.
func (q *quotedCRLF) Source(off int64) int64 {
	i := 0
	for i < len(q.inserted) && q.inserted[i] < off {
		i++
	}
	q.done += int64(i)
	q.inserted = q.inserted[:copy(q.inserted, q.inserted[i:])]
	return off - q.done
}
