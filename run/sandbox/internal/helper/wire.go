package helper

import (
	"errors"
	"io"
	"strconv"
)

// The view and the call cross the pipe as frames: a length, then fields
// in a fixed order (strings and byte strings length-prefixed, lists
// count-prefixed, numbers as varints). Parent and helper are one
// program, so the order is the schema; encoding/json would make the
// helper wait for the libraries' init (see the package comment).

// Encode is m as one frame.
func (m *Message) Encode() []byte {
	var e encoder
	e.bool(m.Full)
	e.bool(m.Network)
	e.string(m.Tmp)
	e.strings(m.View.Writable)
	e.strings(m.View.ReadOnly)
	e.strings(m.View.Protected)
	l := m.View.Limits
	for _, v := range []int64{l.MemoryBytes, l.Processes, l.FileBytes, l.OpenFiles, l.TmpBytes, l.CPUSeconds, l.MilliCPUs} {
		e.int(v)
	}
	e.string(string(m.Seccomp))
	return e.frame()
}

// Encode is c as one frame.
func (c *Call) Encode() []byte {
	var e encoder
	e.strings(c.Argv)
	e.string(c.Dir)
	e.strings(c.Env)
	e.bool(c.NullStdin)
	return e.frame()
}

// DecodeMessage reads a Message frame of at most max bytes.
func DecodeMessage(r io.Reader, max int) (*Message, error) {
	d, err := readFrame(r, max)
	if err != nil {
		return nil, err
	}
	m := &Message{View: &View{}}
	m.Full = d.bool()
	m.Network = d.bool()
	m.Tmp = d.string()
	m.View.Writable = d.strings()
	m.View.ReadOnly = d.strings()
	m.View.Protected = d.strings()
	l := &m.View.Limits
	for _, v := range []*int64{&l.MemoryBytes, &l.Processes, &l.FileBytes, &l.OpenFiles, &l.TmpBytes, &l.CPUSeconds, &l.MilliCPUs} {
		*v = d.int()
	}
	m.Seccomp = []byte(d.string())
	return m, d.end()
}

// DecodeCall reads a Call frame of at most max bytes.
func DecodeCall(r io.Reader, max int) (*Call, error) {
	d, err := readFrame(r, max)
	if err != nil {
		return nil, err
	}
	c := &Call{}
	c.Argv = d.strings()
	c.Dir = d.string()
	c.Env = d.strings()
	c.NullStdin = d.bool()
	return c, d.end()
}

type encoder struct{ b []byte }

func (e *encoder) uint(v uint64) {
	for v >= 0x80 {
		e.b = append(e.b, byte(v)|0x80)
		v >>= 7
	}
	e.b = append(e.b, byte(v))
}

func (e *encoder) int(v int64) { e.uint(uint64(v)<<1 ^ uint64(v>>63)) }

func (e *encoder) bool(v bool) {
	if v {
		e.uint(1)
	} else {
		e.uint(0)
	}
}

func (e *encoder) string(s string) {
	e.uint(uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) strings(l []string) {
	e.uint(uint64(len(l)))
	for _, s := range l {
		e.string(s)
	}
}

func (e *encoder) frame() []byte {
	var f encoder
	f.uint(uint64(len(e.b)))
	return append(f.b, e.b...)
}

var errFrame = errors.New("malformed frame")

// readFrame reads one frame of at most max bytes.
func readFrame(r io.Reader, max int) (*decoder, error) {
	var n uint64
	var one [1]byte
	for shift := 0; ; shift += 7 {
		if shift > 28 {
			return nil, errFrame
		}
		if _, err := io.ReadFull(r, one[:]); err != nil {
			return nil, err
		}
		n |= uint64(one[0]&0x7f) << shift
		if one[0] < 0x80 {
			break
		}
	}
	if n > uint64(max) {
		return nil, errors.New("frame of " + strconv.FormatUint(n, 10) + " bytes, over " + strconv.Itoa(max))
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return &decoder{b: b}, nil
}

// decoder reads fields; the first malformed one sets err, and every
// later read returns zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uint() uint64 {
	var v uint64
	for i := 0; d.err == nil; i++ {
		if i >= len(d.b) || i > 9 {
			d.err = errFrame
			break
		}
		c := d.b[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			d.b = d.b[i+1:]
			return v
		}
	}
	return 0
}

func (d *decoder) int() int64 {
	u := d.uint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) bool() bool { return d.uint() != 0 }

func (d *decoder) string() string {
	n := d.uint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.err = errFrame
	}
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// strings reads a list; each entry takes at least a byte, so a count past
// the bytes left is malformed (and bounds the allocation).
func (d *decoder) strings() []string {
	n := d.uint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.err = errFrame
	}
	if d.err != nil || n == 0 {
		return nil
	}
	l := make([]string, n)
	for i := range l {
		l[i] = d.string()
	}
	return l
}

// end is the frame's error: a malformed field, or bytes left over.
func (d *decoder) end() error {
	if d.err == nil && len(d.b) > 0 {
		d.err = errFrame
	}
	return d.err
}
